package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/internal/lazyconn"
	"github.com/sluicehq/sluice/host/internal/sockpeek"
	"github.com/sluicehq/sluice/host/proxy/internal/balance"
	"github.com/sluicehq/sluice/host/proxy/internal/health"
	"github.com/valyala/fasthttp"
	"golang.org/x/net/http2"

	"github.com/sluicehq/sluice/host/internal/ascii"
)

// upstream is one server and the client that talks to it: a fasthttp
// HostClient for HTTP/1.1, an x/net/http2 Transport for HTTP/2.
type upstream struct {
	h       *Handler
	t       target
	node    *balance.Node
	passive health.Passive

	requests, failures atomic.Uint64
	timed              atomic.Uint64          // tries reported to obs; their durations sum in latency
	latency            atomic.Int64           // nanoseconds
	lastErr            atomic.Pointer[string] // the last failed try's error, for the status page

	hc      *fasthttp.HostClient // HTTP/1.1
	probeHC *fasthttp.HostClient // HTTP/1.1 health checks, on their own connections
	h2      *http2.Transport     // HTTP/2 (h2c, or https with HTTP2)
	tls     *tls.Config          // https upstreams

	open, busy atomic.Int64 // connections open, and checked out

	cookie, cookieTLS string // sticky Set-Cookie values

	span      spanInfo                     // shared by the client spans
	obs       UpstreamObserver             // nil without Options.Observe
	tried     TryObserver                  // obs, when it is one; else nil
	check     atomic.Pointer[health.Check] // the active check; nil without one, or before Start
	healthMu  sync.Mutex                   // orders health reports; not on the request path
	healthy   bool                         // as last reported (logged, counted, told to obs)
	readmit   *time.Timer                  // reports the end of a passive cool-down
	obsClosed bool
}

func newUpstream(h *Handler, t target, weight int) (*upstream, error) {
	id := fmt.Sprintf("%016x", balance.HashString(t.raw))
	u := &upstream{h: h, t: t, node: balance.NewNode(id, weight), span: newSpanInfo(t), healthy: true}
	u.cookie = h.cookieName + "=" + id + "; Path=/; HttpOnly; SameSite=Lax"
	u.cookieTLS = u.cookie + "; Secure"
	useH2 := t.scheme == "h2c" || (t.scheme == "https" && h.opts.HTTP2)
	if t.scheme == "https" {
		alpn := []string{"http/1.1"}
		if useH2 {
			alpn = []string{"h2"}
		}
		cfg, err := h.opts.tlsConfig(alpn)
		if err != nil {
			return nil, err
		}
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(t.addr)
			if err != nil {
				return nil, err
			}
			cfg.ServerName = host
		}
		u.tls = cfg
	}
	if useH2 {
		u.h2 = newH2Transport(u)
		return u, nil
	}
	maxConns := h.s.maxConns
	var wait time.Duration
	if maxConns == 0 {
		maxConns = math.MaxInt32
	} else {
		wait = h.s.timeout
	}
	u.hc = &fasthttp.HostClient{
		Addr:                          t.addr,
		DialTimeout:                   u.dial,
		MaxConns:                      maxConns,
		MaxConnWaitTimeout:            wait,
		MaxIdleConnDuration:           h.s.idleTimeout,
		MaxIdemponentCallAttempts:     1, // retries are ours
		ReadBufferSize:                16 << 10,
		DisableHeaderNamesNormalizing: true,
		DisablePathNormalizing:        true,
		NoDefaultUserAgentHeader:      true,
		ConnPoolStrategy:              fasthttp.LIFO,
	}
	if h.opts.Health != nil {
		u.probeHC = &fasthttp.HostClient{
			Addr: t.addr,
			DialTimeout: func(addr string, timeout time.Duration) (net.Conn, error) {
				return u.dialRaw(context.Background(), addr, timeout, u.tls)
			},
			MaxConns:                  4,
			MaxIdleConnDuration:       h.s.idleTimeout,
			MaxIdemponentCallAttempts: 1,
			ReadBufferSize:            16 << 10,
			NoDefaultUserAgentHeader:  true,
		}
	}
	return u, nil
}

func (u *upstream) closeIdle() {
	if u.hc != nil {
		u.hc.CloseIdleConnections()
	}
	if u.probeHC != nil {
		u.probeHC.CloseIdleConnections()
	}
	if u.h2 != nil {
		u.h2.CloseIdleConnections()
	}
}

// dial connects for the HostClient, counting open connections so that
// idle ones beyond MaxIdleConns are closed rather than pooled.
func (u *upstream) dial(addr string, timeout time.Duration) (net.Conn, error) {
	c, err := u.dialRaw(context.Background(), addr, timeout, u.tls)
	if err != nil {
		return nil, err
	}
	u.open.Add(1)
	return &countedConn{Conn: c, u: u}, nil
}

// dialRaw connects to addr, and completes a TLS handshake when cfg is set.
// Its errors are *dialError.
func (u *upstream) dialRaw(ctx context.Context, addr string, timeout time.Duration, cfg *tls.Config) (net.Conn, error) {
	dt := u.h.s.dialTimeout
	if timeout > 0 && timeout < dt {
		dt = timeout
	}
	d := net.Dialer{Timeout: dt, KeepAlive: 30 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, &dialError{err}
	}
	c = lazyconn.Wrap(c)
	if cfg != nil {
		tc := tls.Client(c, cfg)
		hctx, cancel := context.WithTimeout(ctx, u.h.s.tlsTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			c.Close()
			return nil, &dialError{fmt.Errorf("tls handshake: %w", err)}
		}
		c = tc
	}
	return c, nil
}

type countedConn struct {
	net.Conn
	u      *upstream
	closed atomic.Bool
	// wdl records a write deadline left set by an earlier request. Only
	// the request holding the connection touches it.
	wdl bool
}

// plainConn returns the TCP connection under c, or nil when c is TLS.
func plainConn(c *countedConn) *lazyconn.Conn {
	if c == nil {
		return nil
	}
	lc, _ := c.Conn.(*lazyconn.Conn)
	return lc
}

// NetConn returns the connection counted, for sockpeek.
func (c *countedConn) NetConn() net.Conn { return c.Conn }

func (c *countedConn) Close() error {
	if !c.closed.Swap(true) {
		c.u.open.Add(-1)
	}
	return c.Conn.Close()
}

// keep ends a connection's checkout and reports whether it goes back to
// the pool: only when it can be reused and MaxIdleConns allows.
func (u *upstream) keep(reusable bool) bool {
	busy := u.busy.Add(-1)
	return reusable && u.open.Load()-busy <= int64(u.h.s.maxIdle)
}

// serveH1 sends the request to an HTTP/1.1 upstream.
func (u *upstream) serveH1(s *state, deadline time.Time) (phase, error) {
	if !s.h1Built {
		s.toH2 = false
		s.buildHeaders()
		s.applyOps(&s.h.headerUp)
		s.h1Built = true
	}
	if err := s.buildH1(u); err != nil {
		return phaseConn, err
	}
	return u.roundTrip(s, deadline)
}

const maxInterim = 16 // 1xx responses skipped before the final one

// staleAfter is the idle time after which a pooled connection is checked
// before reuse; busy connections are reused without a look.
const staleAfter = 200 * time.Millisecond

// roundTrip is one HTTP/1.1 exchange on a pooled connection: a
// checkout, the request sent, the response head awaited, the response
// relayed to the client's exchange: whole when it is small (or
// Buffering is on), else as a stream that holds the try until the
// client has it all. Every path ends the try with one done.
func (u *upstream) roundTrip(s *state, deadline time.Time) (phase, error) {
	var t try
	if err := u.checkout(s, deadline, &t); err != nil {
		return phaseConn, err
	}
	if ph, err := t.send(deadline); err != nil {
		t.done(false)
		return ph, err
	}
	if err := t.awaitHead(); err != nil {
		t.done(false)
		return phaseWait, err
	}
	return phaseWait, t.relay() // done by relay, or by the stream's Close
}

// try is one request's hold on a pooled HTTP/1.1 connection. checkout
// takes the connection and counts the request in flight and the
// connection busy; done gives the connection back (kept or closed) and
// undoes exactly that, once, on every path: a failure, a relayed
// answer, or the Close of a streamed body.
type try struct {
	u    *upstream
	s    *state // nil once a streamed body owns the try: s is recycled
	cc   any    // fasthttp's *clientConn, which has no exported name: see giveBack
	conn net.Conn
	cut  *goneCut           // ends the waits the moment the client leaves
	br   *bufio.Reader      // the answer's reader, from awaitHead on
	resp *fasthttp.Response // the answer, from awaitHead on
	head time.Time          // the deadline of the wait for the answer's head
}

// checkout takes a connection from u's pool for s, waiting for one up to
// deadline; a connection the upstream closed while it sat idle is
// dropped for another. The request counts in flight from the start of
// the wait.
func (u *upstream) checkout(s *state, deadline time.Time, t *try) error {
	u.node.InFlight.Add(1)
	hc := u.hc
	cc, err := hc.AcquireConn(time.Until(deadline), false)
	for tries := 0; err == nil && tries < 4 && time.Since(cc.LastUseTime()) > staleAfter && !alive(cc.Conn()); tries++ {
		// Sending on it would fail after the fact, and a POST could then
		// not be retried.
		hc.CloseConn(cc)
		cc, err = hc.AcquireConn(time.Until(deadline), false)
	}
	if err != nil {
		u.node.InFlight.Add(-1)
		return err
	}
	u.busy.Add(1)
	*t = try{u: u, s: s, cc: cc, conn: cc.Conn()}
	// From here the wait for the answer (WriteWait's included) ends the
	// moment the client leaves.
	t.cut = cutOnGone(s.x, t.conn)
	return nil
}

// done ends the try: the connection goes back to the pool when reuse
// holds, its cut never fired (a past read deadline may be on it) and
// MaxIdleConns allows, else it is closed; the reader and the answer are
// released, and busy and in flight undone. Later calls do nothing.
func (t *try) done(reuse bool) {
	u := t.u
	if u == nil {
		return
	}
	if !t.cut.end() {
		reuse = false
	}
	if t.br != nil {
		u.hc.ReleaseReader(t.br)
	}
	if t.resp != nil {
		fasthttp.ReleaseResponse(t.resp)
	}
	if u.keep(reuse) {
		giveBack(releaseConn, u.hc, t.cc)
	} else {
		giveBack(closeConn, u.hc, t.cc)
	}
	u.node.InFlight.Add(-1)
	*t = try{}
}

// releaseConn and closeConn are the HostClient's ways to end a
// checkout, typed by inference: the connection type AcquireConn returns
// is unexported, so a try keeps it as any, and giveBack asserts it back.
var (
	releaseConn = (*fasthttp.HostClient).ReleaseConn
	closeConn   = (*fasthttp.HostClient).CloseConn
)

// giveBack calls end (releaseConn or closeConn) on cc. A pointer in an
// interface costs no allocation.
func giveBack[C any](end func(*fasthttp.HostClient, C), hc *fasthttp.HostClient, cc any) {
	end(hc, cc.(C))
}

// headDeadline is when a wait for an answer's head starting now ends.
func (t *try) headDeadline(deadline time.Time) time.Time {
	if d := time.Now().Add(t.u.h.s.headerTimeout); d.Before(deadline) {
		return d
	}
	return deadline
}

// send writes the request head and body and sets the deadline of the
// wait for the answer's head: from now for a bodyless request, whose
// write fits the socket buffer of a connection whose previous exchange
// is complete (it cannot block) and goes out from inside that wait
// (lazyconn.WriteWait); from the body's end otherwise.
func (t *try) send(deadline time.Time) (phase, error) {
	s, conn := t.s, t.conn
	t.head = t.headDeadline(deadline)
	cnt, _ := conn.(*countedConn)
	var err error
	if s.bodyLen == 0 {
		// The first wait is clientCheck at most: awaitData looks at the
		// client between waits.
		first := nextCheck(t.head)
		if cnt == nil || cnt.wdl {
			err = conn.SetDeadline(first)
		} else {
			err = conn.SetReadDeadline(first)
		}
	} else {
		err = conn.SetWriteDeadline(deadline)
		if cnt != nil {
			cnt.wdl = true
		}
	}
	if lc := plainConn(cnt); err == nil && lc != nil && s.bodyLen == 0 {
		err = lc.WriteWait(s.hd.wire)
	} else if err == nil {
		hc := t.u.hc
		bw := hc.AcquireWriter(conn)
		_, err = bw.Write(s.hd.wire)
		if err == nil && s.bodyLen != 0 {
			err = s.writeBody(bw)
		}
		if err == nil {
			err = bw.Flush()
		}
		hc.ReleaseWriter(bw)
	}
	switch {
	case t.cut.fired.Load():
		return phaseSend, errClientGone
	case err != nil:
		return phaseSend, err
	case s.bodyLen != 0:
		t.head = t.headDeadline(deadline)
		return phaseWait, conn.SetReadDeadline(t.head)
	}
	return phaseWait, nil
}

// awaitHead waits for the answer's head, up to t.head, looking at the
// client meanwhile, and reads it: interim (1xx) answers are skipped, but
// 101 and at most maxInterim of them.
func (t *try) awaitHead() error {
	t.br = t.u.hc.AcquireReader(t.conn)
	if err := awaitData(t.br, t.conn, t.head, t.s.clientGone, &t.cut.fired); err != nil {
		return err
	}
	t.resp = fasthttp.AcquireResponse()
	t.resp.Header.DisableNormalizing()
	for n := 0; ; n++ {
		if err := t.resp.Header.Read(t.br); err != nil {
			return err
		}
		if st := t.resp.Header.StatusCode(); st >= 200 || st == http.StatusSwitchingProtocols || n >= maxInterim {
			break
		}
	}
	if t.cut.fired.Load() {
		return errClientGone
	}
	return nil
}

// relay hands the answer to the client: a head alone, a body read whole
// (up to bufferLimit, or any with Buffering), or a stream that holds
// the try until the client has it.
func (t *try) relay() error {
	s, resp := t.s, t.resp
	status := resp.Header.StatusCode()
	s.gotResponse(t.u, status)
	cl := resp.Header.ContentLength() // -1 chunked, -2 until close
	switch {
	case noBody(status, s.head):
		reuse := !resp.Header.ConnectionClose()
		s.writeH1Header(t.u, resp, status)
		if s.head && status != http.StatusNoContent && status != http.StatusNotModified {
			s.x.SendReader(http.NoBody, int64(max(cl, -1)))
		}
		t.done(reuse)
		return nil
	case cl >= 0 && cl <= bufferLimit || t.u.h.opts.Buffering:
		return t.relayBuffered(status, cl)
	}
	t.relayStream(status, cl)
	return nil
}

// relayBuffered reads the body whole, then answers with it.
func (t *try) relayBuffered(status, cl int) error {
	s, resp, br := t.s, t.resp, t.br
	var err error
	if cl < 0 || br.Buffered() < cl {
		err = t.conn.SetReadDeadline(time.Now().Add(t.u.h.s.timeout))
	}
	if err == nil {
		err = resp.ReadBody(br, 0)
	}
	if err == nil && cl == -1 {
		err = resp.Header.ReadTrailer(br)
	}
	if err != nil {
		t.done(false)
		return err
	}
	reuse := cl != -2 && !resp.Header.ConnectionClose()
	s.writeH1Header(t.u, resp, status)
	s.x.Write(resp.Body())
	t.done(reuse)
	return nil
}

// relayStream answers with the body as it comes: an h1Body takes the
// try, and its Close ends it.
func (t *try) relayStream(status, cl int) {
	s, resp := t.s, t.resp
	x := s.x
	resp.StreamBody = true
	_ = resp.ReadBody(t.br, 0) // only sets up the stream
	s.writeH1Header(t.u, resp, status)
	for _, k := range resp.Header.PeekTrailerKeys() {
		x.AddResponseHeaderBytes([]byte("Trailer"), k)
	}
	b := bodyPool.Get().(*h1Body)
	b.t, b.rs = *t, resp.BodyStream()
	b.t.s = nil
	b.left, b.gone = int64(cl), exchange.ClientWatch(x)
	*t = try{}
	x.SendReader(b, int64(max(cl, -1)))
}

// clientCheckEvery is how often a request waiting for its upstream's
// answer looks whether its client is still there, in nanoseconds; atomic
// because tests shorten it while watches of earlier tests may still tick.
var clientCheckEvery atomic.Int64

func init() { clientCheckEvery.Store(int64(time.Second)) }

func clientCheck() time.Duration { return time.Duration(clientCheckEvery.Load()) }

// errClientGone ends a try whose client went away while it waited: the
// upstream connection is closed (the upstream sees its client leave, as
// behind nginx), and the upstream is not blamed for it.
var errClientGone = errors.New("client closed the connection while the upstream was answering")

func (s *state) clientGone() bool { return exchange.ClientGone(s.x) }

// nextCheck is when a wait that may last until end next stops to look at
// the client.
func nextCheck(end time.Time) time.Time {
	if c := time.Now().Add(clientCheck()); c.Before(end) {
		return c
	}
	return end
}

// goneCut ends a wait on an upstream connection the moment the engine
// learns that the client left (exchange.AfterClientGone: an HTTP/2 reset,
// say), rather than at the wait's next look at the client: a past read
// deadline on conn, fired set first, so that a wait that moved the
// deadline since sees fired.
type goneCut struct {
	conn  net.Conn
	fired atomic.Bool
	stop  func() bool
	ended bool // end ran; ok is its answer
	ok    bool
}

// noCut is the cut of an engine that does not signal a client's leaving
// (exchange.ClientGoneSignalled): it never fires, and nothing writes it.
var noCut = goneCut{ended: true, ok: true}

func cutOnGone(x exchange.Exchange, conn net.Conn) *goneCut {
	if !exchange.ClientGoneSignalled(x) {
		return &noCut // fasthttp: no allocation; awaitData looks instead
	}
	g := &goneCut{conn: conn}
	g.stop = exchange.AfterClientGone(x, g.fire)
	return g
}

// end stops the cut, once, and reports whether it never fired: when it
// did (or does now), conn may get a past deadline and is not reused.
func (g *goneCut) end() bool {
	if !g.ended {
		g.ended, g.ok = true, g.stop()
	}
	return g.ok
}

func (g *goneCut) fire() {
	g.fired.Store(true)
	_ = g.conn.SetReadDeadline(time.Unix(1, 0))
}

// awaitData waits until br has a byte to read (the upstream's answer, or
// more of its body), up to end, calling gone every clientCheck; it stops
// at once when cut is set (goneCut). It leaves conn's read deadline at
// end. Errors other than errClientGone are left for the next read of br
// to meet. A quick answer costs one read and no timer work: lazyconn
// moves a deadline only to bring it forward.
func awaitData(br *bufio.Reader, conn net.Conn, end time.Time, gone func() bool, cut *atomic.Bool) error {
	// Bounded by end: each turn waits clientCheck of it.
	for {
		check := nextCheck(end)
		if check.Equal(end) {
			if err := conn.SetReadDeadline(end); err != nil || !cut.Load() {
				return err
			}
			return errClientGone
		}
		if err := conn.SetReadDeadline(check); err != nil {
			return err
		}
		if cut.Load() {
			return errClientGone
		}
		_, err := br.Peek(1)
		if err == nil || !isTimeout(err) {
			return conn.SetReadDeadline(end)
		}
		if cut.Load() || gone() {
			return errClientGone
		}
	}
}

// writeH1Header copies status and end-to-end headers to the client.
func (s *state) writeH1Header(u *upstream, resp *fasthttp.Response, status int) {
	x := s.x
	x.SetStatus(status)
	conn := resp.Header.Peek("Connection")
	for k, v := range resp.Header.All() {
		if hopByHop(k) || ascii.EqualFold(k, "content-length") || listed(conn, k) {
			continue
		}
		x.AddResponseHeaderBytes(k, v)
	}
	s.writeHeaderDown(u)
}

// h1Body streams an HTTP/1.1 upstream's body to the client; it holds
// the try, which its Close ends: the connection back to the pool when the
// body was read to its end.
type h1Body struct {
	t    try
	rs   io.Reader
	eof  bool
	left int64       // bytes of a Content-Length body not read yet; negative when unknown
	gone func() bool // whether the client has left (exchange.ClientWatch)
}

var bodyPool = sync.Pool{New: func() any { return new(h1Body) }}

func (b *h1Body) Read(p []byte) (int, error) {
	t := &b.t
	if t.br.Buffered() == 0 && b.left != 0 {
		// Timeout bounds each wait for more of the body, not its whole.
		if err := awaitData(t.br, t.conn, time.Now().Add(t.u.h.s.timeout), b.gone, &t.cut.fired); err != nil {
			return 0, err
		}
	}
	n, err := b.rs.Read(p)
	if b.left > 0 {
		b.left -= int64(n)
	}
	switch {
	case err == io.EOF:
		b.eof = true
	case err != nil && t.cut.fired.Load():
		err = errClientGone // cut short, not the upstream's failure
	case err != nil:
		t.u.failures.Add(1)
		t.u.h.log.Debug("proxy: upstream body failed", "upstream", t.u.t.raw, "error", err)
	}
	return n, err
}

// VisitTrailers reports the trailers of a chunked body.
func (b *h1Body) VisitTrailers(fn func(name, value []byte)) {
	h := &b.t.resp.Header
	for _, k := range h.PeekTrailerKeys() {
		if v := h.PeekBytes(k); v != nil {
			fn(k, v)
		}
	}
}

func (b *h1Body) Close() error {
	reuse := b.eof && !b.t.resp.Header.ConnectionClose()
	_ = b.t.resp.CloseBodyStream()
	b.t.done(reuse)
	*b = h1Body{}
	bodyPool.Put(b)
	return nil
}

// probe is one active health check.
func (u *upstream) probe(ctx context.Context, path string) (int, error) {
	if u.h2 != nil {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.h2Scheme()+"://"+u.t.addr+path, nil)
		if err != nil {
			return 0, err
		}
		req.Host = u.t.host
		resp, err := u.h2.RoundTrip(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + u.t.addr + path)
	req.Header.SetHost(u.t.host)
	req.Header.Set("User-Agent", "sluice-health-check")
	timeout := 2 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	if err := u.probeHC.DoTimeout(req, resp, timeout); err != nil {
		return 0, err
	}
	return resp.StatusCode(), nil
}

// alive reports whether an idle pooled connection is still open, by
// peeking at its socket without blocking: nothing to read means open;
// the upstream's close means not; stray bytes on a plain connection mean
// it can no longer be trusted to frame a response.
func alive(c net.Conn) bool {
	switch s, isTLS := sockpeek.Look(c); s {
	case sockpeek.Closed:
		return false
	case sockpeek.Data:
		return isTLS // a TLS record (a ticket, say) may come unasked
	}
	return true
}
