package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/valyala/fasthttp"

	"github.com/sluicehq/sluice/host/internal/ascii"
)

// serveUpgrade passes a protocol switch (WebSocket) through: it sends the
// upgrade request on a fresh upstream connection, relays the answer, and on
// 101 copies bytes both ways until either side closes.
func (h *Handler) serveUpgrade(x exchange.Exchange) error {
	if exchange.Multiplexed(x) { // HTTP/2 and HTTP/3 have no Upgrade
		return exchange.Errorf(http.StatusBadRequest, "upgrade not supported on %s", x.Proto())
	}
	s := h.states.Get().(*state)
	defer func() { s.finish(); h.states.Put(s) }()
	s.start(x, x.ContentLength())
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
		h.failed(u, err)
		return h.gatewayError(err)
	}
	return h.gatewayError(last)
}

func (h *Handler) upgradeOn(s *state, u *upstream, conn net.Conn, deadline time.Time) error {
	x := s.x
	s.buildH1(u)
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
	_ = conn.SetDeadline(time.Time{})
	x.SetStatus(status)
	for k, v := range resp.Header.All() {
		if ascii.EqualFold(k, "content-length") || ascii.EqualFold(k, "transfer-encoding") {
			continue
		}
		x.AddResponseHeaderBytes(k, v)
	}
	s.writeHeaderDown(u)
	u.node.InFlight.Add(1)
	err := x.Upgrade(func(client net.Conn, buffered io.Reader) {
		defer u.node.InFlight.Add(-1)
		relay(client, buffered, conn, br)
	})
	if err != nil {
		u.node.InFlight.Add(-1)
	}
	return err
}

// relay copies both ways until one side is done, then closes both.
func relay(client net.Conn, fromClient io.Reader, up net.Conn, fromUp io.Reader) {
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			client.Close()
			up.Close()
		})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(up, fromClient)
		closeBoth()
	}()
	_, _ = io.Copy(client, fromUp)
	closeBoth()
	<-done
}
