package proxy

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/valyala/fasthttp"

	"github.com/sluicehq/sluice/host/internal/ascii"
)

// serveUpgrade passes a protocol switch (WebSocket) through: it sends the
// upgrade request on a fresh upstream connection, relays the answer, and on
// 101 copies bytes both ways until either side closes. An extended
// CONNECT for WebSocket on HTTP/2 (RFC 8441) goes up as an HTTP/1.1
// upgrade (GET, Upgrade: websocket, a Sec-WebSocket-Key of ours), and the
// upstream's 101 opens the stream's tunnel with 200.
func (h *Handler) serveUpgrade(x exchange.Exchange) error {
	proto := exchange.ConnectProtocol(x)
	switch {
	case proto != nil && !ascii.EqualFold(proto, "websocket"):
		return exchange.Errorf(http.StatusNotImplemented, "extended CONNECT for %q not supported", proto)
	case proto == nil && exchange.Multiplexed(x): // HTTP/2 and HTTP/3 have no Upgrade
		return exchange.Errorf(http.StatusBadRequest, "upgrade not supported on %s", x.Proto())
	}
	s := h.states.Get().(*state)
	defer func() { s.finish(); h.states.Put(s) }()
	if proto != nil {
		exchange.WillBlock(x) // the upstream may be slow: not on a read loop
		s.start(x, 0)         // the stream's DATA is the tunnel, not a body
		var k [16]byte
		_, _ = rand.Read(k[:])
		s.wsKey = base64.StdEncoding.AppendEncode(s.wsKey[:0], k[:])
	} else {
		s.start(x, x.ContentLength())
	}
	s.upgrade = true
	s.buildHeaders()
	s.applyOps(&h.headerUp)
	s.h1Built = true

	deadline := time.Now().Add(h.s.timeout)
	key := s.balanceKey()
	var last error
	for try := 0; try < h.s.tries; try++ {
		u := h.next(s, key)
		if u == nil {
			if last == nil {
				return errNoHealthy
			}
			break
		}
		s.beginTry(u)
		var cfg = u.tls
		if cfg != nil && u.h2 != nil {
			// The upgrade is an HTTP/1.1 exchange.
			cfg = cfg.Clone()
			cfg.NextProtos = []string{"http/1.1"}
		}
		conn, err := u.dialRaw(x.Context(), u.t.addr, time.Until(deadline), cfg)
		if err != nil {
			s.endTry(u, err)
			last = err
			h.failed(u, err)
			continue
		}
		err = h.upgradeOn(s, u, conn, deadline)
		s.endTry(u, err)
		if err == nil {
			u.passive.Success()
			return nil
		}
		conn.Close()
		if errors.Is(err, errUnwritable) {
			return err // the request's fault: no failure counted
		}
		h.failed(u, err)
		return h.gatewayError(err)
	}
	return h.gatewayError(last)
}

func (h *Handler) upgradeOn(s *state, u *upstream, conn net.Conn, deadline time.Time) error {
	x := s.x
	if err := s.buildH1(u); err != nil {
		return err
	}
	hdrDeadline := time.Now().Add(h.s.headerTimeout)
	if hdrDeadline.After(deadline) {
		hdrDeadline = deadline
	}
	if err := conn.SetDeadline(hdrDeadline); err != nil {
		return err
	}
	bw := bufio.NewWriter(conn)
	if _, err := bw.Write(s.hd.wire); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	br := bufio.NewReaderSize(conn, 16<<10)
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	resp.Header.DisableNormalizing()
	if err := resp.Header.Read(br); err != nil {
		return err
	}
	status := resp.Header.StatusCode()
	s.gotResponse(u, status)
	if status != http.StatusSwitchingProtocols {
		// Refused: relay the answer as it is.
		if err := resp.ReadBody(br, 1<<20); err != nil && status >= 200 && status != 204 && status != 304 {
			return err
		}
		s.writeH1Header(u, resp, status)
		x.Write(resp.Body())
		conn.Close()
		return nil
	}
	ws := len(s.wsKey) > 0
	if ws && !bytes.Equal(resp.Header.Peek("Sec-WebSocket-Accept"), wsAccept(s.wsKey)) {
		return errBadAccept
	}
	_ = conn.SetDeadline(time.Time{})
	if ws {
		status = http.StatusOK // the HTTP/2 tunnel is open (RFC 8441, 5)
	}
	x.SetStatus(status)
	for k, v := range resp.Header.All() {
		if ascii.EqualFold(k, "content-length") || ascii.EqualFold(k, "transfer-encoding") {
			continue
		}
		if ws && (ascii.EqualFold(k, "sec-websocket-accept") || ascii.EqualFold(k, "upgrade") || ascii.EqualFold(k, "connection")) {
			continue
		}
		x.AddResponseHeaderBytes(k, v)
	}
	s.writeHeaderDown(u)
	u.node.InFlight.Add(1)
	err := x.Upgrade(func(client net.Conn, buffered io.Reader) {
		defer u.node.InFlight.Add(-1)
		relay(client, buffered, conn, br, h.s.tunnelIdle)
	})
	if err != nil {
		u.node.InFlight.Add(-1)
	}
	return err
}

var errBadAccept = errors.New("upstream's Sec-WebSocket-Accept does not match the key sent")

// wsAccept is the Sec-WebSocket-Accept answering key (RFC 6455, 4.2.2).
func wsAccept(key []byte) []byte {
	h := sha1.New()
	h.Write(key)
	h.Write([]byte("258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.AppendEncode(nil, h.Sum(nil))
}

// relay copies both ways until one side is done, or until no byte has
// passed either way for idle, then closes both. The idle check is a
// timer (a goroutine of its own, ended with the relay) that looks at the
// last read when it fires, not a deadline per read: a tunnel where one side talks and the other listens is not idle,
// and any net.Conn (an HTTP/2 stream's too) can be watched so.
func relay(client net.Conn, fromClient io.Reader, up net.Conn, fromUp io.Reader, idle time.Duration) {
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			// A deadline in the past first: it ends a read in progress
			// where Close does not (fasthttp's hijacked conn closes only
			// once the hijack handler, this relay, has returned).
			_ = client.SetDeadline(aLongTimeAgo)
			_ = up.SetDeadline(aLongTimeAgo)
			client.Close()
			up.Close()
		})
	}
	var last atomic.Int64 // unix nanoseconds of the last byte read, either way
	last.Store(time.Now().UnixNano())
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTimer(idle)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			quiet := time.Duration(time.Now().UnixNano() - last.Load())
			if quiet >= idle {
				closeBoth() // the copies fail and relay returns
				return
			}
			t.Reset(idle - quiet)
		}
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		copyTunnel(up, fromClient, &last)
		closeBoth()
	}()
	copyTunnel(client, fromUp, &last)
	closeBoth()
	<-done
}

// aLongTimeAgo is a deadline that has passed: it stops a blocked read.
var aLongTimeAgo = time.Unix(1, 0)

// tunnelBufs are the buffers of tunnel copies.
var tunnelBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// copyTunnel copies src to dst until either fails, recording in last
// when each read returned bytes.
func copyTunnel(dst io.Writer, src io.Reader, last *atomic.Int64) {
	bp := tunnelBufs.Get().(*[]byte)
	defer tunnelBufs.Put(bp)
	buf := *bp
	for {
		n, err := src.Read(buf)
		if n > 0 {
			last.Store(time.Now().UnixNano())
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
