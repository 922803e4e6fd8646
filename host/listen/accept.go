package listen

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/host/tlsconf"
	"golang.org/x/crypto/acme"
)

// acceptLoop sorts connections to the engines: after the TLS handshake by
// ALPN protocol, or on a plain h2c listener by the first bytes. Each
// connection is looked at in its own goroutine so that a slow client
// cannot hold up the others.
func (l *Listener) acceptLoop() error {
	var delay time.Duration
	for {
		c, err := l.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// Out of file descriptors and the like: back off.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		if l.base != nil {
			go l.sortTLS(c)
		} else {
			go l.sortPlain(c)
		}
	}
}

func (l *Listener) sortTLS(c net.Conn) {
	hc := &headDeadlineConn{Conn: c}
	tc := tls.Server(hc, l.base)
	_ = c.SetDeadline(time.Now().Add(l.handshake))
	if err := tc.Handshake(); err != nil {
		l.log.Debug("tls handshake failed", "address", l.opts.Address, "remote", c.RemoteAddr().String(), "error", err)
		_ = c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	switch tc.ConnectionState().NegotiatedProtocol {
	case "h2":
		if l.opts.ReadTimeout > 0 && l.h2 == nil { // host/h2 keeps its own deadlines
			// The preface, SETTINGS and first request's headers arrive
			// within read_header_timeout (headDeadlineConn).
			hc.held.Store(true)
			_ = c.SetReadDeadline(time.Now().Add(l.handshake))
		}
		l.toH2.put(tc)
	case acme.ALPNProto:
		// A TLS-ALPN-01 validation: the handshake was the answer.
		_ = tc.Close()
	default: // "http/1.1", or no ALPN
		l.toFast.put(tc)
	}
}

// headDeadlineConn is the TCP side of a TLS connection. For one that
// negotiated HTTP/2 it keeps the read deadline sortTLS set
// (read_header_timeout) past net/http, which clears the connection's
// deadlines after its (already done) handshake and would otherwise wait
// for the client's preface for a fixed 10 s, and for its first request
// with no deadline at all. The first clearing is skipped; the next comes
// from net/http's HTTP/2 server once a request's headers are in (it does
// so when ReadTimeout is set, which sortTLS checks), and from then on
// every deadline passes through.
type headDeadlineConn struct {
	net.Conn
	held atomic.Bool
}

func (c *headDeadlineConn) SetReadDeadline(t time.Time) error {
	if t.IsZero() && c.held.CompareAndSwap(true, false) {
		return nil
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *headDeadlineConn) SetDeadline(t time.Time) error {
	if t.IsZero() && c.held.Load() {
		return c.Conn.SetWriteDeadline(t)
	}
	return c.Conn.SetDeadline(t)
}

// NetConn returns the connection wrapped, for sockpeek and linger.
func (c *headDeadlineConn) NetConn() net.Conn { return c.Conn }

// h2Preface is what an HTTP/2 client sends first (RFC 9113, 3.4).
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

func (l *Listener) sortPlain(c net.Conn) {
	pc := &peekedConn{Conn: c}
	_ = c.SetReadDeadline(time.Now().Add(l.handshake))
	h2, err := pc.sniff(h2Preface)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil && len(pc.buf) == 0 {
		_ = c.Close()
		return
	}
	if h2 {
		l.toH2.put(pc)
	} else {
		l.toFast.put(pc)
	}
}

// tlsConfig picks the TLS settings for a handshake: an ACME challenge,
// or the site the client named in the current generation.
func (l *Listener) tlsConfig(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	if c, ok := tlsconf.ChallengeConfig(hello); ok {
		return c, nil
	}
	if l.tls != nil {
		if t := l.tls(); t != nil {
			return t.GetConfigForClient(hello)
		}
	}
	return nil, errNoCertificate
}

var errNoCertificate = errors.New("no certificate configured for this address")

// closeQueues stops handing connections to the engines; their Serve
// loops return.
func (l *Listener) closeQueues() {
	if l.toFast != nil {
		l.toFast.Close()
		l.toH2.Close()
	}
}

// rootListener is the bound socket as the server sees it: closing it
// also closes the queues, so that every engine's Serve returns.
type rootListener struct {
	net.Listener
	close func()
	once  sync.Once
}

func (r *rootListener) Close() error {
	err := r.Listener.Close()
	r.once.Do(r.close)
	return err
}

// connQueue is a net.Listener fed by the accept loop: Accept returns the
// connections put to it, sorted by protocol.
type connQueue struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newConnQueue(addr net.Addr) *connQueue {
	return &connQueue{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

// put hands c to the engine, or closes it when the queue is closed.
func (q *connQueue) put(c net.Conn) {
	select {
	case q.ch <- c:
	case <-q.done:
		_ = c.Close()
	}
}

func (q *connQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.ch:
		return c, nil
	case <-q.done:
		return nil, net.ErrClosed
	}
}

func (q *connQueue) Close() error {
	q.once.Do(func() { close(q.done) })
	return nil
}

func (q *connQueue) Addr() net.Addr { return q.addr }

// peekedConn is a connection whose first bytes were read to choose its
// engine; Read returns them again first.
type peekedConn struct {
	net.Conn
	buf []byte
}

// sniff reads until the bytes read so far stop matching want, or all of
// it has arrived, and reports the latter. It never reads past len(want),
// and stops at the first byte that differs, so an HTTP/1.1 request costs
// one read.
func (p *peekedConn) sniff(want string) (bool, error) {
	var b [len(h2Preface)]byte
	n := 0
	for n < len(want) {
		m, err := p.Conn.Read(b[n:len(want)])
		n += m
		p.buf = b[:n:n]
		if string(b[:n]) != want[:n] {
			p.buf = append([]byte(nil), b[:n]...)
			return false, nil
		}
		if err != nil {
			p.buf = append([]byte(nil), b[:n]...)
			return false, err
		}
	}
	p.buf = append([]byte(nil), b[:n]...)
	return true, nil
}

func (p *peekedConn) Read(b []byte) (int, error) {
	if len(p.buf) > 0 {
		n := copy(b, p.buf)
		p.buf = p.buf[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// NetConn returns the connection sniffed, for sockpeek.
func (p *peekedConn) NetConn() net.Conn { return p.Conn }

// ReadFrom keeps sendfile(2) for fasthttp's file bodies.
func (p *peekedConn) ReadFrom(r io.Reader) (int64, error) {
	return readFrom(p.Conn, r)
}

func readFrom(c net.Conn, r io.Reader) (int64, error) {
	if rf, ok := c.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(writerOnly{c}, r)
}

type writerOnly struct{ io.Writer }
