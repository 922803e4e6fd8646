package h2

import (
	"io"
	"net"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"golang.org/x/net/http2"
)

// Upgrade takes an extended CONNECT stream (RFC 8441) as a tunnel: it
// answers with the status set (2xx: the tunnel is open) and the headers,
// then runs fn on the stream as a net.Conn (reads are the client's DATA,
// writes go out as DATA within flow-control credit) and returns once fn
// has returned. Closing the conn ends the stream (END_STREAM); a reset
// by the client, or its connection ending, fails the conn's reads and
// writes. Any other request gets exchange.ErrUpgradeUnsupported: HTTP/2
// has no Upgrade.
func (st *stream) Upgrade(fn func(conn net.Conn, buffered io.Reader)) error {
	if st.Protocol() == nil || st.tooBig {
		return exchange.ErrUpgradeUnsupported
	}
	c := st.c
	st.ResetBody()
	st.resp.del("Content-Length")
	st.WillBlock() // the tunnel may last: not on the read loop
	c.mu.Lock()
	if st.closed {
		c.mu.Unlock()
		return errStreamClosed
	}
	st.tunnel = true
	c.writeHeadersLocked(st, false)
	c.mu.Unlock()
	c.flush()
	t := &tunnelConn{st: st}
	defer t.Close()
	fn(t, t)
	return nil
}

// tunnelConn is an extended CONNECT stream as a net.Conn.
type tunnelConn struct{ st *stream }

func (t *tunnelConn) Read(p []byte) (int, error) { return bodyOf{t.st}.Read(p) }

func (t *tunnelConn) Write(p []byte) (int, error) {
	n, err := streamWriter{t.st}.Write(p)
	t.st.c.flush()
	return n, err
}

// Close ends the stream with END_STREAM, once; a client still sending
// then has its DATA dropped (or the stream reset, 8.1).
func (t *tunnelConn) Close() error {
	st := t.st
	c := st.c
	c.mu.Lock()
	if st.tunnelShut {
		c.mu.Unlock()
		return nil
	}
	st.tunnelShut = true
	st.cond.Broadcast()
	if !st.closed && !st.localDone {
		c.wbuf = appendFrameHeader(c.wbuf, 0, http2.FrameData, http2.FlagDataEndStream, st.id)
		st.finishLocked()
	}
	c.mu.Unlock()
	c.flush()
	return nil
}

func (t *tunnelConn) LocalAddr() net.Addr  { return t.st.c.nc.LocalAddr() }
func (t *tunnelConn) RemoteAddr() net.Addr { return t.st.c.nc.RemoteAddr() }

// SetDeadline and SetReadDeadline bound the waits for the client's DATA;
// writes are bounded by the server's WriteTimeout while they wait for
// credit.
func (t *tunnelConn) SetDeadline(d time.Time) error    { return t.SetReadDeadline(d) }
func (t *tunnelConn) SetWriteDeadline(time.Time) error { return nil }
func (t *tunnelConn) SetReadDeadline(d time.Time) error {
	c := t.st.c
	c.mu.Lock()
	t.st.readDL = d
	t.st.cond.Broadcast()
	c.mu.Unlock()
	return nil
}
