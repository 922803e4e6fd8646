package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/internal/ascii"
	"github.com/valyala/fasthttp"
	"golang.org/x/net/http2"
)

// newH2Transport returns the HTTP/2 client of an h2c:// upstream, or of an
// https:// one with Options.HTTP2.
func newH2Transport(u *upstream) *http2.Transport {
	t := &http2.Transport{
		DisableCompression: true,
		IdleConnTimeout:    u.h.s.idleTimeout,
		ReadIdleTimeout:    30 * time.Second, // ping a quiet connection
		PingTimeout:        15 * time.Second,
	}
	if u.t.scheme == "h2c" {
		t.AllowHTTP = true
		t.DialTLSContext = func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			return u.dialRaw(ctx, u.t.addr, 0, nil)
		}
	} else {
		t.TLSClientConfig = u.tls
		t.DialTLSContext = func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			return u.dialRaw(ctx, u.t.addr, 0, u.tls)
		}
	}
	return t
}

func (u *upstream) h2Scheme() string {
	if u.t.scheme == "h2c" {
		return "http"
	}
	return "https"
}

// serveH2 sends the request to an HTTP/2 upstream. The request counts in
// flight until it fails, or its answer is relayed (the body's Close).
func (u *upstream) serveH2(s *state, deadline time.Time) (ph phase, err error) {
	u.node.InFlight.Add(1)
	defer func() {
		if err != nil {
			u.node.InFlight.Add(-1)
		}
	}()
	x := s.x
	req, err := s.h2Request(u)
	if err != nil {
		return phaseConn, err
	}
	base := x.Context()
	if _, ok := base.(*fasthttp.RequestCtx); ok {
		// Its Done is the server's, not the client's; deriving from it
		// would cost a watcher goroutine per request.
		base = context.Background()
	}
	ctx, cancel := context.WithCancelCause(base)
	if s.bodyLen != 0 {
		// The transport may read the body after this request's state is
		// recycled (until the stream ends), so it gets its own reader.
		lim := s.lim
		req.Body = io.NopCloser(&lim)
		req.ContentLength = s.bodyLen
		defer func() { s.lim.exceeded = s.lim.exceeded || lim.exceeded }()
	}
	req = req.WithContext(ctx)
	wait := time.Until(deadline)
	if wait > s.h.s.headerTimeout {
		wait = s.h.s.headerTimeout
	}
	w := newH2Watch(cancel, exchange.ClientWatch(x), wait)
	resp, err := u.h2.RoundTrip(req)
	if err != nil {
		w.stop()
		cause := context.Cause(ctx)
		cancel(nil)
		var de *dialError
		switch {
		case errors.Is(cause, errHeaderTimeout):
			return phaseWait, errHeaderTimeout
		case errors.Is(cause, errClientGone):
			return phaseWait, errClientGone
		case errors.As(err, &de):
			return phaseConn, err
		}
		return phaseWait, err
	}
	u.relayH2(s, resp, cancel, w)
	return phaseWait, nil
}

// h2Request builds the request for an HTTP/2 upstream: the headers once
// per request (every try shares them), the target and Host per try. It
// refuses, as buildH1 does, what no HTTP/1.1 head could carry.
func (s *state) h2Request(u *upstream) (*http.Request, error) {
	x := s.x
	if s.h2Header == nil {
		s.toH2 = true
		s.h2Header = make(http.Header, 16)
		s.buildHeaders()
		s.applyOps(&s.h.headerUp)
		s.toH2 = false
		s.h2URI = string(s.uri)
	}
	if s.h2Bad || !ascii.Token(x.Method()) || !cleanTarget(s.uri) || s.h.keepHost && !cleanValue(x.Host()) {
		// HPACK would carry them, and an upstream that turns the request
		// into HTTP/1.1 again would write them.
		return nil, errUnwritable
	}
	ru, err := url.ParseRequestURI(s.h2URI)
	if err != nil {
		return nil, err
	}
	ru.Scheme, ru.Host = u.h2Scheme(), u.t.addr
	req := &http.Request{
		Method:     string(x.Method()),
		URL:        ru,
		Proto:      "HTTP/2.0",
		ProtoMajor: 2,
		Header:     s.h2Header.Clone(),
		Host:       u.t.host,
	}
	if s.h.keepHost {
		req.Host = string(x.Host())
	}
	if v := req.Header.Get("Host"); v != "" {
		req.Host = v // set by HeaderUp
		req.Header.Del("Host")
	}
	if s.parent.IsValid() {
		s.injectH2(req.Header)
	}
	return req, nil
}

// relayH2 hands an HTTP/2 upstream's answer to the client: its head,
// and its body as a stream (h2Body, whose Close ends the request's count
// in flight), unless it has none.
func (u *upstream) relayH2(s *state, resp *http.Response, cancel context.CancelCauseFunc, w *h2Watch) {
	x := s.x
	s.gotResponse(u, resp.StatusCode)
	x.SetStatus(resp.StatusCode)
	for k, vs := range resp.Header {
		kb := []byte(k)
		if hopByHop(kb) || k == "Content-Length" {
			continue
		}
		for _, v := range vs {
			x.AddResponseHeader(k, v)
		}
	}
	for k := range resp.Trailer {
		x.AddResponseHeader("Trailer", k)
	}
	s.writeHeaderDown(u)
	if noBody(resp.StatusCode, s.head) {
		w.stop()
		resp.Body.Close()
		cancel(nil)
		if s.head && resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusNotModified {
			x.SendReader(http.NoBody, resp.ContentLength)
		}
		u.node.InFlight.Add(-1)
		return
	}
	w.wait(s.h.s.timeout) // now the longest wait for more of the body
	b := &h2Body{u: u, resp: resp, cancel: cancel, w: w}
	size := resp.ContentLength
	if len(resp.Trailer) > 0 {
		size = -1 // trailers need a chunked body on HTTP/1.1
	}
	x.SendReader(b, size)
}

// h2Watch ends an HTTP/2 exchange that waits too long (for the response
// headers, then for each next piece of the body) or whose client has
// left: a fasthttp request's context does not end when its client goes.
// It ticks every clientCheck until stopped; gone (exchange.ClientWatch)
// stays valid after the handler returns, while the body streams.
type h2Watch struct {
	cancel  context.CancelCauseFunc
	gone    func() bool
	timer   *time.Timer
	limit   atomic.Int64 // the longest wait, nanoseconds
	since   atomic.Int64 // when the current wait began, Unix nanoseconds
	left    atomic.Bool  // the client left: not the upstream's failure
	stopped atomic.Bool
}

func newH2Watch(cancel context.CancelCauseFunc, gone func() bool, limit time.Duration) *h2Watch {
	w := &h2Watch{cancel: cancel, gone: gone}
	w.wait(limit)
	w.timer = time.AfterFunc(time.Hour, w.tick)
	w.timer.Reset(min(limit, clientCheck()))
	return w
}

// wait starts a wait of at most limit.
func (w *h2Watch) wait(limit time.Duration) {
	w.limit.Store(int64(limit))
	w.since.Store(time.Now().UnixNano())
}

func (w *h2Watch) tick() {
	if w.stopped.Load() {
		return
	}
	limit := time.Duration(w.limit.Load())
	waited := time.Since(time.Unix(0, w.since.Load()))
	switch {
	case waited >= limit:
		w.cancel(errHeaderTimeout)
	case w.gone():
		w.left.Store(true)
		w.cancel(errClientGone)
	default:
		w.timer.Reset(min(limit-waited, clientCheck()))
	}
}

func (w *h2Watch) stop() {
	w.stopped.Store(true)
	w.timer.Stop()
}

// h2Body streams an HTTP/2 upstream's body, and then its trailers (gRPC's
// status), to the client.
type h2Body struct {
	u      *upstream
	resp   *http.Response
	cancel context.CancelCauseFunc
	w      *h2Watch
	once   sync.Once
}

func (b *h2Body) Read(p []byte) (int, error) {
	b.w.wait(b.u.h.s.timeout)
	n, err := b.resp.Body.Read(p)
	if err != nil && err != io.EOF && !b.w.left.Load() && !b.w.gone() {
		b.u.failures.Add(1)
		b.u.h.log.Debug("proxy: upstream body failed", "upstream", b.u.t.raw, "error", err)
	}
	return n, err
}

func (b *h2Body) VisitTrailers(fn func(name, value []byte)) {
	for k, vs := range b.resp.Trailer {
		for _, v := range vs {
			fn([]byte(k), []byte(v))
		}
	}
}

func (b *h2Body) Close() error {
	b.once.Do(func() {
		b.w.stop()
		b.resp.Body.Close()
		b.cancel(nil)
		b.u.node.InFlight.Add(-1)
	})
	return nil
}
