package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/proxy/forwarded"
	"github.com/sluicehq/sluice/host/proxy/internal/balance"
	"github.com/sluicehq/sluice/host/proxy/internal/health"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/host/internal/ascii"
)

// Handler proxies requests to a set of upstreams. It is safe for
// concurrent use; build one per route with New and Close it when the route
// goes away.
type Handler struct {
	opts    Options
	s       settings
	log     *slog.Logger
	ups     []*upstream
	policy  balance.Policy
	keyKind keyKind
	checker *health.Checker
	tracer  trace.Tracer
	closed  atomic.Bool

	keepHost   bool
	upSetsHost bool
	strip      []byte
	cookieName string
	hashHeader string
	headerUp   headerOps
	headerDown headerOps

	states sync.Pool
}

type keyKind uint8

const (
	keyNone keyKind = iota
	keyIP
	keyHeader
	keyCookie
)

type headerOps struct {
	remove   []string
	set, add [][2]string
}

func compileOps(o *HeaderOps) headerOps {
	var h headerOps
	if o == nil {
		return h
	}
	h.remove = append(h.remove, o.Remove...)
	for k, v := range o.Set {
		h.set = append(h.set, [2]string{k, v})
	}
	for k, v := range o.Add {
		h.add = append(h.add, [2]string{k, v})
	}
	return h
}

// New checks opts and builds a handler: it loads the TLS files and sets
// up each upstream's connection pool, and starts nothing (no goroutine,
// no connection). Start starts its health checks; Close releases it,
// started or not.
func New(opts Options) (*Handler, error) {
	s, err := opts.settings()
	if hh := opts.HostHeader; err == nil && hh != "" && hh != "upstream" && hh != "keep" {
		opts.HostHeader, opts.HeaderUp = "", literalHost(opts.HeaderUp, hh)
	}
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	if len(opts.Upstreams) == 0 {
		return nil, errors.New("proxy: no upstreams")
	}
	if !validBalance(opts.Balance) {
		return nil, fmt.Errorf("proxy: balance %q: want one of %v", opts.Balance, balance.Names)
	}
	h := &Handler{
		opts:       opts,
		s:          s,
		log:        opts.Logger,
		keepHost:   opts.HostHeader == "keep",
		strip:      []byte(opts.StripPrefix),
		cookieName: opts.Cookie,
		hashHeader: opts.HashHeader,
		headerUp:   compileOps(opts.HeaderUp),
		headerDown: compileOps(opts.HeaderDown),
	}
	if opts.TLS != nil {
		if _, err := opts.tlsConfig(nil); err != nil {
			return nil, fmt.Errorf("proxy: %w", err)
		}
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.cookieName == "" {
		h.cookieName = "sluice_upstream"
	}
	tp := opts.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	h.tracer = tp.Tracer(tracerName)
	if opts.HeaderUp != nil {
		for k := range opts.HeaderUp.Set {
			if http.CanonicalHeaderKey(k) == "Host" {
				h.upSetsHost = true
			}
		}
	}
	switch opts.Balance {
	case "ip_hash":
		h.keyKind = keyIP
	case "header_hash":
		h.keyKind = keyHeader
	case "cookie":
		h.keyKind = keyCookie
	}
	nodes := make([]*balance.Node, 0, len(opts.Upstreams))
	seen := map[string]bool{}
	for _, uo := range opts.Upstreams {
		t, err := parseTarget(uo.URL)
		if err != nil {
			h.closeUpstreams()
			return nil, fmt.Errorf("proxy: %w", err)
		}
		if uo.Weight < 0 {
			h.closeUpstreams()
			return nil, fmt.Errorf("proxy: upstream %q: negative weight", uo.URL)
		}
		if seen[t.raw] {
			h.closeUpstreams()
			return nil, fmt.Errorf("proxy: upstream %q listed twice", uo.URL)
		}
		seen[t.raw] = true
		u, err := newUpstream(h, t, uo.Weight)
		if err != nil {
			h.closeUpstreams()
			return nil, fmt.Errorf("proxy: upstream %q: %w", uo.URL, err)
		}
		if opts.Observe != nil {
			u.obs = opts.Observe(t.raw)
			u.tried, _ = u.obs.(TryObserver)
		}
		h.ups = append(h.ups, u)
		nodes = append(nodes, u.node)
	}
	h.policy, err = balance.New(opts.Balance, nodes)
	if err != nil {
		h.closeUpstreams()
		return nil, fmt.Errorf("proxy: %w", err)
	}
	h.states.New = func() any { return newState(h) }
	return h, nil
}

// Start starts what runs in the background: the active health checks, when
// Options.Health is set. New starts nothing, so that a handler can be built
// to check a config and closed without having run; the host starts a
// generation's handlers just before it swaps the generation in. Start is
// called at most once, before Close.
func (h *Handler) Start() {
	hc := h.opts.Health
	if hc == nil || h.checker != nil || h.closed.Load() {
		return
	}
	h.checker = health.NewChecker()
	def := *hc
	def.SetDefaults()
	cfg := health.Config{Interval: def.Interval, Timeout: def.Timeout, Expect: def.ExpectStatus, Rise: def.Rise, Fall: def.Fall}
	for _, u := range h.ups {
		c := h.checker.Start(cfg, func(ctx context.Context) (int, error) { return u.probe(ctx, hc.Path) },
			func(up bool, status int, err error) {
				if up {
					// Passing checks end a passive ejection too: the
					// upstream answers again, so waiting out the rest of
					// fail_timeout would only keep traffic from it.
					u.node.SetDown(false)
					u.node.Readmit()
					u.healthChanged(ReasonActiveRise)
					return
				}
				u.node.SetDown(true)
				u.healthChanged(ReasonActiveFall, "status", status, "error", err)
			})
		u.check.Store(c)
	}
}

// Close stops the health checks, closes idle upstream connections and
// the upstreams' observers. Requests in flight finish.
func (h *Handler) Close() error {
	if h.closed.Swap(true) {
		return nil
	}
	if h.checker != nil {
		h.checker.Close()
	}
	h.closeUpstreams()
	return nil
}

func (h *Handler) closeUpstreams() {
	for _, u := range h.ups {
		u.closeIdle()
		u.closeObserver()
	}
}

// Stats reports each upstream's state, in the order of Options.Upstreams.
func (h *Handler) Stats() []UpstreamStats {
	out := make([]UpstreamStats, len(h.ups))
	for i, u := range h.ups {
		down, ejected := u.node.Down(), u.node.Ejected()
		out[i] = UpstreamStats{
			URL:      u.t.raw,
			Healthy:  !down && !ejected,
			InFlight: u.node.InFlight.Load(),
			Requests: u.requests.Load(),
			Failures: u.failures.Load(),
			Down:     down,
			Ejected:  ejected,
			Timed:    u.timed.Load(),
			Latency:  time.Duration(u.latency.Load()),
		}
		if ejected {
			out[i].EjectedFor = u.node.EjectedFor()
		}
		if e := u.lastErr.Load(); e != nil {
			out[i].LastError = *e
		}
	}
	return out
}

// Passive returns the passive health settings in force: failures in a
// row that eject (0: never) and for how long.
func (h *Handler) Passive() (maxFails int, coolDown time.Duration) {
	return h.s.maxFails, h.s.coolDown
}

// HealthPath is the active checks' path, "" without active checks.
func (h *Handler) HealthPath() string {
	if h.opts.Health == nil {
		return ""
	}
	return h.opts.Health.Path
}

// Errors answered to clients. Their messages name no upstream.
var (
	errNoHealthy = &exchange.Error{Status: http.StatusServiceUnavailable, Message: "no healthy upstream"}
	errTooLarge  = &exchange.Error{Status: http.StatusRequestEntityTooLarge, Message: "request body too large"}
	errClosed    = &exchange.Error{Status: http.StatusServiceUnavailable, Message: "no healthy upstream"}
)

// phase says how far a try got before it failed, which decides whether it
// may be tried again.
type phase uint8

const (
	phaseConn phase = iota // no connection: nothing was sent
	phaseSend              // failed while sending the request
	phaseWait              // sent; failed waiting for or reading the response
)

// dialError marks a failure to connect (or to complete the TLS handshake).
type dialError struct{ err error }

func (e *dialError) Error() string { return "dial: " + e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

var errHeaderTimeout = errors.New("timeout awaiting response headers")

// ServeExchange proxies one request.
func (h *Handler) ServeExchange(x exchange.Exchange) error {
	if h.closed.Load() {
		return errClosed
	}
	cl := x.ContentLength()
	if h.opts.MaxBody > 0 && cl > h.opts.MaxBody {
		return errTooLarge
	}
	if isUpgrade(x) {
		return h.serveUpgrade(x)
	}
	exchange.WillBlock(x) // the upstream may be slow: not on a read loop
	s := h.states.Get().(*state)
	s.start(x, cl)
	err := h.serve(s)
	s.finish()
	h.states.Put(s)
	return err
}

func (h *Handler) serve(s *state) error {
	x := s.x
	if h.opts.MaxBody > 0 && s.bodyLen > h.opts.MaxBody {
		return errTooLarge
	}
	now := time.Now()
	deadline := now.Add(h.s.timeout)
	tryEnd := now.Add(h.s.tryDuration)
	key := s.balanceKey()
	retryable := s.replayable && idempotent(x.Method())
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
		var ph phase
		var err error
		if u.h2 != nil {
			ph, err = u.serveH2(s, deadline)
		} else {
			ph, err = u.serveH1(s, deadline)
		}
		s.endTry(u, err)
		if err == nil {
			u.passive.Success()
			return nil
		}
		if s.lim.exceeded {
			return errTooLarge
		}
		if errors.Is(err, errUnwritable) {
			return err // the request's fault, never the upstream's: no failure, no retry
		}
		if errors.Is(err, errClientGone) || exchange.ClientGone(x) {
			// Not the upstream's fault: no failure counted, no retry.
			return &exchange.Error{Status: statusClientClosed, Message: "client closed request", Err: err}
		}
		last = err
		h.failed(u, err)
		if ph != phaseConn && !retryable {
			break
		}
		if now := time.Now(); now.After(tryEnd) || !now.Before(deadline) {
			break
		}
		if ph != phaseConn && s.seeker != nil {
			if _, err := s.seeker.Seek(s.bodyStart, io.SeekStart); err != nil {
				break
			}
		}
	}
	return h.gatewayError(last)
}

// failed records a failed try for stats and passive health.
func (h *Handler) failed(u *upstream, err error) {
	u.failures.Add(1)
	msg := err.Error()
	u.lastErr.Store(&msg)
	h.log.Debug("proxy: upstream try failed", "upstream", u.t.raw, "error", err)
	if h.s.maxFails > 0 && u.passive.Fail(h.s.maxFails) {
		u.node.Eject(h.s.coolDown)
		u.check.Load().Ejected()
		u.ejected(err)
	}
}

// next picks the upstream of the next try: one not tried yet for this
// request, else (every available one was tried) any; nil when none is
// available.
func (h *Handler) next(s *state, key []byte) *upstream {
	i := h.policy.Pick(key, s.tried)
	if i < 0 && len(s.tried) > 0 {
		// Every available upstream was tried: one may take it again.
		i = h.policy.Pick(key, nil)
	}
	if i < 0 {
		return nil
	}
	s.tried = append(s.tried, i)
	u := h.ups[i]
	u.requests.Add(1)
	return u
}

// gatewayError turns a try's error into the answer: 504 for timeouts
// waiting on the upstream, 502 for the rest (a failed connect included).
func (h *Handler) gatewayError(err error) error {
	var de *dialError
	var xe *exchange.Error
	switch {
	case errors.As(err, &xe) && xe.Status >= 400 && xe.Status < 500:
		// The client's fault, found while relaying its request (a body
		// over the listener's limit, say): answer that, not 502.
		return xe
	case errors.As(err, &de):
		return &exchange.Error{Status: http.StatusBadGateway, Message: "bad gateway", Err: err}
	case isTimeout(err):
		return &exchange.Error{Status: http.StatusGatewayTimeout, Message: "gateway timeout", Err: err}
	}
	return &exchange.Error{Status: http.StatusBadGateway, Message: "bad gateway", Err: err}
}

// statusClientClosed is nginx's 499: logged and counted, never sent.
const statusClientClosed = 499

func isTimeout(err error) bool {
	if errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, errHeaderTimeout) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// isUpgrade reports whether the request asks to switch protocols
// (WebSocket, say): an Upgrade header and "upgrade" among the Connection
// tokens.
func isUpgrade(x exchange.Exchange) bool {
	if exchange.ConnectProtocol(x) != nil {
		return true // extended CONNECT (RFC 8441): serveUpgrade decides
	}
	up := x.RequestHeader("Upgrade")
	if len(up) == 0 || ascii.EqualFold(up, "h2c") {
		// An h2c upgrade is between the client and this server; the
		// request is proxied as an ordinary one.
		return false
	}
	return ascii.HasToken(x.RequestHeader("Connection"), "upgrade")
}

// hopByHop reports whether a header belongs to one connection only (RFC
// 9110, section 7.6.1) and is never forwarded as is.
func hopByHop(k []byte) bool {
	switch len(k) {
	case 2:
		return ascii.EqualFold(k, "te")
	case 7:
		return ascii.EqualFold(k, "trailer") || ascii.EqualFold(k, "upgrade")
	case 10:
		return ascii.EqualFold(k, "connection") || ascii.EqualFold(k, "keep-alive")
	case 17:
		return ascii.EqualFold(k, "transfer-encoding")
	}
	return len(k) > 6 && ascii.EqualFold(k[:6], "proxy-")
}

// listed reports whether k is one of the tokens of a Connection header.
func listed(conn, k []byte) bool { return ascii.HasToken(conn, b2s(k)) }

func isConnReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// state is one request's scratch space, pooled so that proxying allocates
// nothing on the fast path.
type state struct {
	h *Handler
	x exchange.Exchange

	hd       head // the request head for HTTP/1.1 upstreams
	h1Built  bool
	h2Header http.Header // the request headers for HTTP/2 upstreams
	h2URI    string
	h2Bad    bool              // a field refused for HTTP/2 (see writable)
	visit    func(k, v []byte) // s.addHeader, bound once
	toH2     bool

	peer, client netip.Addr
	trusted      bool
	upgrade      bool
	wsKey        []byte // extended CONNECT: the Sec-WebSocket-Key sent upstream
	head         bool
	conn         []byte // the request's Connection header
	xff, fwd     []byte // X-Forwarded-For and Forwarded values, being built
	hasXFP       bool
	hasXFH       bool
	uri          []byte // path (prefix stripped) and query sent upstream
	key          []byte // balance key scratch
	tried        []int
	triedBuf     [8]int

	// Observing: the request's span context, loaded once (valid: the
	// trace context sent upstream is ours, not the client's); the try's
	// client span (sampled requests only), start and response.
	parent   trace.SpanContext
	span     trace.Span
	tryStart time.Time
	respAt   time.Time // when the try's response headers arrived
	status   int
	tp       [traceparentLen]byte

	bodyLen    int64     // -1: unknown
	body       io.Reader // the client's body
	lim        bodyReader
	seeker     io.Seeker // set when the body can be sent again
	bodyStart  int64
	replayable bool
}

func newState(h *Handler) *state {
	s := &state{h: h}
	s.visit = s.addHeader
	return s
}

// bodyReader hides the client's body from fasthttp, which would close it,
// and enforces MaxBody on bodies of unknown length.
type bodyReader struct {
	r        io.Reader
	left     int64 // bytes still allowed; <0: no limit
	exceeded bool
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.left >= 0 {
		if b.left == 0 {
			// Allowed bytes are used up: anything more is too much.
			var one [1]byte
			n, err := b.r.Read(one[:])
			if n > 0 {
				b.exceeded = true
				return 0, errTooLarge
			}
			return 0, err
		}
		if int64(len(p)) > b.left {
			p = p[:b.left]
		}
	}
	n, err := b.r.Read(p)
	if b.left >= 0 {
		b.left -= int64(n)
	}
	return n, err
}

func (s *state) start(x exchange.Exchange, cl int64) {
	s.x = x
	s.parent = trace.SpanContextFromContext(x.Context())
	s.tried = s.triedBuf[:0]
	s.head = string(x.Method()) == http.MethodHead
	// The peer is the connection's other end; the client is who the
	// front door decided it is (the listener's trusted_proxies). A peer
	// the listener or this route trusts keeps its forwarding headers.
	s.peer = forwarded.Peer(exchange.Peer(x))
	s.trusted = exchange.PeerTrusted(x) ||
		len(s.h.opts.TrustedProxies) > 0 && forwarded.Trusted(s.peer, s.h.opts.TrustedProxies)
	s.client = forwarded.Peer(x.RemoteAddr())
	s.bodyLen = cl
	s.replayable = cl == 0
	if cl != 0 {
		r := x.RequestBody()
		if cl < 0 {
			// A body already in memory has a known length after all.
			if l, ok := r.(interface{ Len() int }); ok {
				cl = int64(l.Len())
				s.bodyLen = cl
			}
		}
		if sk, ok := r.(io.Seeker); ok {
			if pos, err := sk.Seek(0, io.SeekCurrent); err == nil {
				s.seeker, s.bodyStart, s.replayable = sk, pos, true
			}
		}
		s.lim = bodyReader{r: r, left: -1}
		if cl < 0 && s.h.opts.MaxBody > 0 {
			s.lim.left = s.h.opts.MaxBody
		}
		s.body = &s.lim
	}
	// Path and query, the prefix stripped. The path as the client sent
	// it goes instead of the canonical one where the host marked it safe
	// (exchange.RawPath) and the prefix strips from both alike.
	path, stripped := stripPrefix(x.Path(), s.h.strip)
	if raw := exchange.RawPath(x); raw != nil {
		if r, ok := stripPrefix(raw, s.h.strip); ok == stripped {
			path = r
		}
	}
	q := x.Query()
	s.uri = s.uri[:0]
	if len(path) == 0 || path[0] != '/' {
		s.uri = append(s.uri, '/')
	}
	s.uri = append(s.uri, path...)
	if len(q) > 0 {
		s.uri = append(s.uri, '?')
		s.uri = append(s.uri, q...)
	}
}

func (s *state) finish() {
	s.hd.reset()
	s.h1Built, s.toH2, s.h2Header, s.h2URI, s.h2Bad = false, false, nil, "", false
	s.x, s.body, s.seeker, s.lim = nil, nil, nil, bodyReader{}
	s.upgrade, s.hasXFP, s.hasXFH, s.wsKey = false, false, false, s.wsKey[:0]
	s.parent, s.span = trace.SpanContext{}, nil
	s.xff, s.fwd, s.conn = s.xff[:0], s.fwd[:0], nil
	if cap(s.uri) > 16<<10 {
		s.uri = nil
	}
}

// stripPrefix removes p from path at a segment boundary and reports
// whether it did.
func stripPrefix(path, p []byte) ([]byte, bool) {
	if len(p) > 0 && hasPrefix(path, p) {
		if len(path) == len(p) || p[len(p)-1] == '/' || path[len(p)] == '/' {
			return path[len(p):], true
		}
	}
	return path, false
}

func hasPrefix(b, p []byte) bool { return len(b) >= len(p) && string(b[:len(p)]) == string(p) }

// balanceKey returns what the hash and cookie policies pick by.
func (s *state) balanceKey() []byte {
	switch s.h.keyKind {
	case keyIP:
		s.decideClient()
		a := s.client.As16()
		s.key = append(s.key[:0], a[:]...)
		return s.key
	case keyHeader:
		return s.x.RequestHeader(s.h.hashHeader)
	case keyCookie:
		return cookieValue(s.x.RequestHeader("Cookie"), s.h.cookieName)
	}
	return nil
}

// decideClient sets s.client from the forwarding headers when the peer
// is a trusted proxy.
func (s *state) decideClient() {
	if s.trusted && !exchange.PeerTrusted(s.x) { // else the front door decided
		s.client = forwarded.Client(s.peer, s.x.RequestHeader("X-Forwarded-For"), s.x.RequestHeader("Forwarded"), s.h.opts.TrustedProxies)
	}
}

// cookieValue finds name's value in a Cookie header.
func cookieValue(h []byte, name string) []byte {
	for len(h) > 0 {
		var c []byte
		if i := bytes.IndexByte(h, ';'); i >= 0 {
			c, h = h[:i], h[i+1:]
		} else {
			c, h = h, nil
		}
		c = ascii.TrimOWS(c)
		if len(c) > len(name) && c[len(name)] == '=' && string(c[:len(name)]) == name {
			return c[len(name)+1:]
		}
	}
	return nil
}

// addHeader takes one client request header and forwards it unless it is
// hop-by-hop or one this proxy writes itself.
func (s *state) addHeader(k, v []byte) {
	if len(s.wsKey) > 0 && len(k) == 17 && ascii.EqualFold(k, "sec-websocket-key") {
		return // an HTTP/2 client has none to send (RFC 8441, 5); ours goes up
	}
	switch len(k) {
	case 4:
		if ascii.EqualFold(k, "host") {
			return
		}
	case 6:
		if ascii.EqualFold(k, "expect") {
			return // the body is sent at once; 100-continue is between client and proxy
		}
	case 2:
		if ascii.EqualFold(k, "te") {
			if ascii.HasToken(v, "trailers") {
				s.put(k, []byte("trailers"))
			}
			return
		}
	case 7:
		if s.upgrade && ascii.EqualFold(k, "upgrade") {
			s.put(k, v)
			return
		}
	case 10, 11:
		if s.parent.IsValid() && isTraceHeader(k) {
			return // ours replace the client's
		}
	case 9:
		if ascii.EqualFold(k, "forwarded") {
			if s.trusted {
				s.fwd = appendList(s.fwd, v)
			}
			return
		}
	case 14:
		if ascii.EqualFold(k, "content-length") {
			return
		}
	case 15:
		if ascii.EqualFold(k, "x-forwarded-for") {
			if s.trusted {
				s.xff = appendList(s.xff, v)
			}
			return
		}
	case 16:
		if ascii.EqualFold(k, "x-forwarded-host") {
			if s.trusted {
				s.hasXFH = true
				s.put(k, v)
			}
			return
		}
	case 17:
		if ascii.EqualFold(k, "x-forwarded-proto") {
			if s.trusted {
				s.hasXFP = true
				s.put(k, v)
			}
			return
		}
	}
	// The front door has applied the client's Connection options to
	// what the client sent, before anything of sluice's was added, and
	// left in Connection only the tokens of fields handled here (Upgrade,
	// TE, ...): listed never takes a header sluice set (an identity
	// header, a filter's) for the client's.
	if hopByHop(k) || listed(s.conn, k) {
		return
	}
	s.put(k, v)
}

func appendList(dst, v []byte) []byte {
	if len(dst) > 0 {
		dst = append(dst, ", "...)
	}
	return append(dst, v...)
}

// put adds a header to the request being built. One that is not
// writable (see writable) marks the request unwritable.
func (s *state) put(k, v []byte) {
	if s.toH2 {
		if !writable(k, v) {
			s.h2Bad = true
			return
		}
		s.h2Header.Add(string(k), string(v))
		return
	}
	s.hd.add(k, v)
}

func (s *state) putString(k, v string) {
	if s.toH2 {
		s.put([]byte(k), []byte(v))
		return
	}
	s.hd.add([]byte(k), []byte(v))
}

// buildHeaders forwards the client's headers and adds the forwarding
// ones.
func (s *state) buildHeaders() {
	x := s.x
	s.xff, s.fwd, s.hasXFP, s.hasXFH = s.xff[:0], s.fwd[:0], false, false
	s.conn = x.RequestHeader("Connection")
	x.VisitRequestHeaders(s.visit)
	s.decideClient()
	proto := "http"
	if x.IsTLS() {
		proto = "https"
	}
	host := x.Host()
	if s.peer.IsValid() {
		if len(s.xff) > 0 {
			s.xff = append(s.xff, ", "...)
		}
		s.xff = s.peer.AppendTo(s.xff)
	}
	if len(s.xff) > 0 {
		s.put([]byte("X-Forwarded-For"), s.xff)
	}
	if !s.hasXFP {
		s.putString("X-Forwarded-Proto", proto)
	}
	if !s.hasXFH && len(host) > 0 {
		s.put([]byte("X-Forwarded-Host"), host)
	}
	f := s.fwd
	if len(f) > 0 {
		f = append(f, ", "...)
	}
	f = append(f, "for="...)
	if s.peer.IsValid() {
		f = forwarded.AppendNode(f, s.peer)
	} else {
		f = append(f, "unknown"...)
	}
	f = append(f, ";proto="...)
	f = append(f, proto...)
	if len(host) > 0 {
		f = append(f, ";host="...)
		f = forwarded.AppendValue(f, host)
	}
	s.fwd = f
	s.put([]byte("Forwarded"), s.fwd)
	if s.upgrade {
		s.putString("Connection", "Upgrade")
	}
	if len(s.wsKey) > 0 {
		s.putString("Upgrade", "websocket")
		s.put([]byte("Sec-WebSocket-Key"), s.wsKey)
	}
}

// applyOps edits the request headers being built with HeaderUp.
func (s *state) applyOps(o *headerOps) {
	for _, k := range o.remove {
		if s.toH2 {
			s.h2Header.Del(k)
		} else {
			s.hd.del(k)
		}
	}
	for _, kv := range o.set {
		if s.toH2 {
			if http.CanonicalHeaderKey(kv[0]) != "Host" {
				s.h2Header.Set(kv[0], kv[1])
			}
		} else {
			s.hd.del(kv[0])
			s.hd.add([]byte(kv[0]), []byte(kv[1]))
		}
	}
	for _, kv := range o.add {
		s.putString(kv[0], kv[1])
	}
}

// upstreamHost is the Host header to send to u.
func (s *state) upstreamHost(u *upstream) string {
	if s.h.keepHost {
		return string(s.x.Host())
	}
	return u.t.host
}

// writeHeaderDown applies HeaderDown and the sticky cookie.
func (s *state) writeHeaderDown(u *upstream) {
	x, o := s.x, &s.h.headerDown
	for _, k := range o.remove {
		x.DelResponseHeader(k)
	}
	for _, kv := range o.set {
		x.SetResponseHeader(kv[0], kv[1])
	}
	for _, kv := range o.add {
		x.AddResponseHeader(kv[0], kv[1])
	}
	if s.h.keyKind == keyCookie {
		if string(cookieValue(x.RequestHeader("Cookie"), s.h.cookieName)) != u.node.ID {
			if x.IsTLS() {
				x.AddResponseHeader("Set-Cookie", u.cookieTLS)
			} else {
				x.AddResponseHeader("Set-Cookie", u.cookie)
			}
		}
	}
}

func noBody(status int, head bool) bool {
	return head || status < 200 || status == http.StatusNoContent || status == http.StatusNotModified
}

var _ exchange.Handler = (*Handler)(nil)

// b2s views b as a string without copying; the string must not outlive b
// nor be kept.
func b2s(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
