package listen

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/h2"
	"github.com/sluicehq/sluice/host/handover"
	"github.com/sluicehq/sluice/host/internal/lazyconn"
	"github.com/sluicehq/sluice/host/tlsconf"
	"github.com/valyala/fasthttp"
	"golang.org/x/crypto/acme"
)

// Options are the settings of one listening address. Zero values
// take the documented defaults of config.Listener.
type Options struct {
	Address           string
	ReadTimeout       time.Duration
	ReadHeaderTimeout time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int64
	MaxRequestBody    int64
	MaxConns          int
	// TLS terminates TLS here; certificates and policies come from the
	// current generation's tlsconf.Table for the address. One TLS
	// listener serves HTTP/1.1 (fasthttp) and HTTP/2 (host/h2, or
	// net/http: HTTP2Engine), chosen by ALPN.
	TLS bool
	// H2C serves cleartext HTTP/2 with prior knowledge on a plain
	// listener: connections that open with the HTTP/2 preface go to the
	// HTTP/2 engine, the rest to fasthttp (which hands an Upgrade: h2c
	// request to host/h2).
	H2C bool
	// HTTP3 also serves HTTP/3 on the port over UDP (h3.go); TLS only.
	HTTP3 bool
	// TCPNoPush corks large HTTP/1.1 responses on plain connections
	// (exchange.CorkFast).
	TCPNoPush bool
	// HTTP2Engine is "std" for net/http's HTTP/2 server; anything else
	// ("sluice", the default) is sluice's own engine (host/h2).
	HTTP2Engine string
}

// Listener is one listening socket and the engines behind it. It
// outlives generations: its handler (Deps.Handler) finds the current
// generation on every request, and the TLS handshake asks Deps.TLS for
// the certificates.
//
// A plain listener without h2c hands its socket straight to fasthttp.
// Otherwise an accept loop looks at each connection first (the TLS
// handshake and its ALPN protocol, or the first bytes for the HTTP/2
// preface) and queues it to the engine that speaks its protocol.
type Listener struct {
	opts Options
	ln   net.Listener // the bound socket; Close stops every engine's accepting
	raw  net.Listener
	fast *fasthttp.Server
	std  *http.Server // HTTP/2 (ALPN h2, or h2c prior knowledge) on net/http; nil when neither
	h2   *h2.Server   // HTTP/2 on sluice's own engine, in place of std (http2_engine "sluice")
	// toFast and toStd receive the connections the accept loop sorted;
	// nil when fasthttp serves the socket itself.
	toFast, toStd *connQueue
	base          *tls.Config // nil on plain listeners
	handshake     time.Duration
	done          chan struct{}  // closed when every serve loop has returned
	h3            *h3Server      // HTTP/3 on the same port (h3.go); nil unless HTTP3
	conns         *limitListener // counts (and with max_conns bounds) the TCP connections
	log           *slog.Logger

	// handler is every engine's request path (Deps.Handler); tls finds
	// the certificates of a handshake (Deps.TLS).
	handler exchange.Handler
	tls     func() *tlsconf.Table
}

// Deps are what a listener is given by the server that opens it; it
// reaches nothing above it otherwise.
type Deps struct {
	// Handler returns the listener's request path, given the HTTP/3
	// announcement (an Alt-Svc value) for its responses, "" without
	// HTTP/3. Open calls it once; every engine serves what it returns.
	Handler func(altSvc string) exchange.Handler
	// TLS returns the certificates and policies the listener's TLS
	// handshakes use now (the current generation's), or nil. It is
	// called once per handshake.
	TLS func() *tlsconf.Table
	// Inherit holds the sockets from systemd or from the sluice this
	// process replaced; Open takes from it before it binds.
	Inherit *handover.Sockets
	// Log receives the listener's events; nil means slog.Default().
	Log *slog.Logger
}

// Open binds the listener's socket (or takes an inherited one) and sets
// up its engines; Serve starts them.
func Open(o Options, d Deps) (*Listener, error) {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	raw, inherited := d.Inherit.Listener("tcp", o.Address)
	if !inherited {
		var err error
		if raw, err = net.Listen("tcp", o.Address); err != nil {
			return nil, fmt.Errorf("listener %q: %w", o.Address, err)
		}
	}
	l := &Listener{opts: o, tls: d.TLS, raw: raw, done: make(chan struct{}), log: d.Log}
	l.conns = newLimitListener(lazyconn.Listener{Listener: raw}, o.MaxConns)
	var ln net.Listener = l.conns
	l.handshake = o.ReadHeaderTimeout
	if l.handshake <= 0 {
		l.handshake = o.ReadTimeout
	}
	if l.handshake <= 0 {
		l.handshake = 10 * time.Second
	}

	altSvc := ""
	if o.HTTP3 && o.TLS {
		altSvc = h3AltSvc(raw.Addr()) // h3.go
	}
	h := d.Handler(altSvc)
	l.handler = h
	l.fast = l.newFast(h)
	if o.TLS || o.H2C {
		if o.HTTP2Engine != "std" {
			l.h2 = l.newH2(h)
		} else {
			l.std = l.newStd(exchange.Std(h, l.renderError))
		}
		l.toFast, l.toStd = newConnQueue(raw.Addr()), newConnQueue(raw.Addr())
	}
	if o.TLS {
		l.base = &tls.Config{
			GetConfigForClient: l.tlsConfig,
			NextProtos:         tlsconf.DefaultNextProtos,
			MinVersion:         tls.VersionTLS12,
		}
	}
	l.ln = &rootListener{Listener: ln, close: l.closeQueues}
	if o.HTTP3 && o.TLS { // h3.go
		var err error
		if l.h3, err = l.openH3(raw.Addr(), d.Inherit); err != nil {
			_ = raw.Close()
			return nil, err
		}
	}

	l.log.Info("listening", "address", raw.Addr().String(), "tls", o.TLS, "h2c", o.H2C, "inherited", inherited)
	return l, nil
}

// Serve starts the engines' loops. The server calls it once the
// generation that routes the listener's requests is in place: an
// inherited socket may hold connections already, and they must not meet
// an empty server.
func (l *Listener) Serve() {
	o := l.opts
	var wg sync.WaitGroup
	serve := func(name string, fn func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(); err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, http.ErrServerClosed) {
				l.log.Error("listener stopped", "address", o.Address, "engine", name, "error", err)
			}
		}()
	}
	if l.toFast == nil {
		serve("fasthttp", func() error { return l.fast.Serve(l.ln) })
	} else {
		serve("fasthttp", func() error { return l.fast.Serve(l.toFast) })
		if l.h2 != nil {
			serve("h2", func() error { return l.h2.Serve(l.toStd) })
		} else {
			serve("net/http", func() error { return l.std.Serve(l.toStd) })
		}
		serve("accept", l.acceptLoop)
	}
	if l.h3 != nil {
		serve("http3", func() error { return l.h3.serve(o.MaxConns) })
	}
	go func() {
		wg.Wait()
		close(l.done)
	}()
}

// Files returns duplicates of the listener's sockets (TCP, and UDP for
// HTTP/3), named for handover.Start, for a successor process.
func (l *Listener) Files() ([]handover.File, error) {
	var files []handover.File
	add := func(kind, addr string, c any) error {
		sc, ok := c.(syscall.Conn)
		if !ok {
			return fmt.Errorf("listener %q: %s socket cannot be handed over", addr, kind)
		}
		f, err := handover.Dup(sc, handover.Name(kind, addr))
		if err != nil {
			return fmt.Errorf("listener %q: %s: %w", addr, kind, err)
		}
		files = append(files, f)
		return nil
	}
	addr := l.opts.Address
	err := add("tcp", addr, l.raw)
	if err == nil && l.h3 != nil {
		err = add("udp", addr, l.h3.pc)
	}
	if err != nil {
		for _, f := range files {
			_ = f.File.Close()
		}
		return nil, err
	}
	return files, nil
}

// newFast configures fasthttp for the HTTP/1.1 connections of this
// listener, with the listener's limits: h behind the exchange adapter
// and the fasthttp shim (fastHandler, engineError).
func (l *Listener) newFast(h exchange.Handler) *fasthttp.Server {
	o := l.opts
	readTimeout, headerReceived := fastTimeouts(o)
	return &fasthttp.Server{
		Handler:                      l.fastHandler(exchange.Fast(h, l.renderError, o.TLS)),
		ErrorHandler:                 l.engineError,
		Name:                         "sluice",
		NoDefaultContentType:         true,
		DisablePreParseMultipartForm: true,
		ReadTimeout:                  readTimeout,
		HeaderReceived:               headerReceived,
		WriteTimeout:                 o.WriteTimeout,
		IdleTimeout:                  o.IdleTimeout,
		ReadBufferSize:               int(o.MaxHeaderBytes),
		WriteBufferSize:              exchange.FastWriteBufferSize,
		MaxRequestBodySize:           int(o.MaxRequestBody),
		Concurrency:                  o.MaxConns,
		CloseOnShutdown:              true,
		TCPKeepalive:                 true,
		SecureErrorLogMessage:        true,
		Logger:                       fastLogger{l.log},
		StreamRequestBody:            true,
	}
}

// fastTimeouts maps the listener's timeouts onto fasthttp, which has one
// ReadTimeout for the request head and body together: it becomes
// read_header_timeout, so that a client trickling its head is cut off
// then (and cannot fill max_conns), and once the head is in,
// HeaderReceived gives the body the rest of read_timeout.
func fastTimeouts(o Options) (time.Duration, func(*fasthttp.RequestHeader) fasthttp.RequestConfig) {
	head, whole := o.ReadHeaderTimeout, o.ReadTimeout
	if head <= 0 || (whole > 0 && head >= whole) {
		return whole, nil
	}
	body := whole
	if body <= 0 {
		body = 100 * 365 * 24 * time.Hour // read_timeout "0s": no limit
	}
	return head, func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
		return fasthttp.RequestConfig{ReadTimeout: body}
	}
}

// newStd configures net/http for the HTTP/2 connections of this
// listener, with the listener's limits.
func (l *Listener) newStd(h http.Handler) *http.Server {
	o := l.opts
	srv := &http.Server{
		Handler:           h,
		ReadTimeout:       o.ReadTimeout,
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		WriteTimeout:      o.WriteTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    int(o.MaxHeaderBytes),
		ErrorLog:          slog.NewLogLogger(l.log.Handler(), slog.LevelDebug),
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams: 250,
			// The RFC's default frame size. net/http advertises 1 MiB,
			// but frames travel in TLS records of at most 16 KiB anyway,
			// and h2spec checks that a larger HEADERS frame is refused.
			MaxReadFrameSize: 16 << 10,
		},
	}
	var p http.Protocols
	if o.TLS {
		p.SetHTTP2(true)
	} else {
		p.SetUnencryptedHTTP2(true)
	}
	srv.Protocols = &p
	return srv
}

// newH2 configures sluice's own HTTP/2 engine with the listener's
// limits. Its flow-control windows and stream cap are net/http's.
func (l *Listener) newH2(h exchange.Handler) *h2.Server {
	o := l.opts
	return h2.New(h2.Options{
		Handler:              h,
		OnError:              l.renderError,
		TLS:                  o.TLS,
		MaxConcurrentStreams: 250,
		MaxHeaderBytes:       int(o.MaxHeaderBytes),
		ReadHeaderTimeout:    l.handshake,
		ReadTimeout:          o.ReadTimeout,
		WriteTimeout:         o.WriteTimeout,
		IdleTimeout:          o.IdleTimeout,
		Log:                  l.log,
	})
}

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
		l.toStd.put(tc)
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
		l.toStd.put(pc)
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

// fastHandler is the fasthttp shim in front of the exchange adapter:
// what is about fasthttp's parser and connections, not about policy
// (that is the front door's, behind Deps.Handler, for every engine). It refuses
// with 400 what fasthttp's parser lets through and RFC 9112 does not
// (fields): a field name with a space in it, Transfer-Encoding
// "identity", and a chunked request that also declares Content-Length.
// An error answer that closes the connection closes it lingering, so
// that a client still sending its body reads the status instead of a
// reset.
func (l *Listener) fastHandler(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		h := &ctx.Request.Header
		if err := fields(h.RawHeaders(), h.ContentLength() == -1); err != nil {
			l.engineError(ctx, err)
			return
		}
		if l.h2 != nil && l.base == nil && h2cUpgrade(h) {
			l.upgradeH2C(ctx)
			return
		}
		next(ctx)
		if l.opts.TCPNoPush && !l.opts.TLS {
			exchange.CorkFast(ctx)
		}
		if ctx.Response.StatusCode() >= 400 && ctx.Response.ConnectionClose() {
			linger(ctx.Conn())
		}
	}
}

// h2cUpgrade reports whether a request asks to switch to h2c (RFC 7540,
// 3.2; RFC 9113 deprecates it, but some clients still send it): Upgrade
// names h2c, HTTP2-Settings is there, and no body comes with it (a
// request with a body is served over HTTP/1.1, which the RFC allows).
func h2cUpgrade(h *fasthttp.RequestHeader) bool {
	if n := h.ContentLength(); n != 0 && n != -2 {
		return false
	}
	return h.Peek("HTTP2-Settings") != nil && hasToken(h.Peek("Upgrade"), "h2c") &&
		hasToken(h.Peek("Connection"), "upgrade")
}

// upgradeH2C answers 101 and hands the connection to host/h2, the
// request becoming its stream 1 (an h2c listener on the sluice engine).
func (l *Listener) upgradeH2C(ctx *fasthttp.RequestCtx) {
	h := &ctx.Request.Header
	conn := h.Peek("Connection")
	u := &h2.Upgrade{Method: string(h.Method()), RequestURI: string(h.RequestURI()), Host: string(h.Host()),
		Settings: string(h.Peek("HTTP2-Settings"))}
	if _, ok := h2.DecodeSettings(u.Settings); !ok {
		ctx.SetConnectionClose()
		ctx.SetStatusCode(fasthttp.StatusBadRequest)
		ctx.SetBodyString("bad request: malformed HTTP2-Settings\n")
		return
	}
	for k, v := range h.All() {
		switch {
		case hopField(k), hasToken(conn, string(k)):
			continue
		}
		u.Fields = append(u.Fields, string(k), string(v))
	}
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		if _, err := io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"); err != nil {
			return
		}
		l.h2.ServeUpgrade(c, nil, u)
	})
}

// hopField reports the fields of an h2c upgrade request that do not
// carry over to HTTP/2.
func hopField(k []byte) bool {
	for _, n := range [...]string{"Connection", "Upgrade", "HTTP2-Settings", "Host", "Keep-Alive",
		"Proxy-Connection", "Transfer-Encoding", "TE", "Content-Length"} {
		if bytes.EqualFold(k, []byte(n)) {
			return true
		}
	}
	return false
}

// hasToken reports whether a comma-separated field value lists tok
// (case-insensitive).
func hasToken(v []byte, tok string) bool {
	for len(v) > 0 {
		i := bytes.IndexByte(v, ',')
		item := v
		if i >= 0 {
			item, v = v[:i], v[i+1:]
		} else {
			v = nil
		}
		if bytes.EqualFold(bytes.TrimSpace(item), []byte(tok)) {
			return true
		}
	}
	return false
}

// engineError answers requests the engine could not parse: malformed
// framing is a 400 (a transfer coding other than chunked too: RFC 9112,
// section 6.3, requires it where chunked is not the final coding, and
// allows it for the rest), an oversized header a 431, an oversized body a
// 413.
func (l *Listener) engineError(ctx *fasthttp.RequestCtx, err error) {
	if l.opts.H2C && failedPreface(err) {
		// On an h2c listener, a first line that is neither the HTTP/2
		// preface nor an HTTP/1.x request line is a failed preface
		// (RFC 9113, 3.4): the connection closes unanswered.
		_ = ctx.Conn().Close()
		return
	}
	status, msg := fasthttp.StatusBadRequest, "bad request"
	var small *fasthttp.ErrSmallBuffer
	switch {
	case errors.As(err, &small):
		status, msg = fasthttp.StatusRequestHeaderFieldsTooLarge, "request header fields too large"
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		status, msg = fasthttp.StatusRequestEntityTooLarge, "request body too large"
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			status, msg = fasthttp.StatusRequestTimeout, "request timeout"
		}
	}
	ctx.Response.Reset()
	ctx.SetConnectionClose()
	ctx.SetStatusCode(status)
	ctx.SetContentType("text/plain; charset=utf-8")
	ctx.SetBodyString(msg + "\n")
	linger(ctx.Conn())
}

// failedPreface reports whether fasthttp refused a request line for a
// version field with no "HTTP/" in it at all ("INVALID CONNECTION
// PREFACE", as h2spec sends): that is no HTTP/1.x client, and on an h2c
// listener an HTTP/2 one that got its preface wrong. A version that is
// HTTP/1.x's gone wrong ("HTTP/1.10", "http/1.1", a trailing space, a
// target with a space in it) is a malformed request, and a 400.
func failedPreface(err error) bool {
	const unsupported = "unsupported http version "
	_, rest, ok := strings.Cut(err.Error(), unsupported)
	if !ok {
		return false
	}
	q, qerr := strconv.QuotedPrefix(rest)
	if qerr != nil {
		return false
	}
	proto, qerr := strconv.Unquote(q)
	if qerr != nil {
		return false
	}
	return !strings.Contains(strings.ToUpper(proto), "HTTP/")
}

// closeQueues stops handing connections to the engines; their Serve
// loops return.
func (l *Listener) closeQueues() {
	if l.toFast != nil {
		l.toFast.Close()
		l.toStd.Close()
	}
}

// Shutdown stops accepting, lets in-flight requests finish, closes
// idle keep-alive connections (HTTP/2 ones with GOAWAY), and waits for
// upgraded ones (WebSocket) to close; it gives up when ctx ends.
func (l *Listener) Shutdown(ctx context.Context) error {
	var errs []error
	if l.toFast != nil {
		_ = l.ln.Close() // the fast path's Serve closes it itself
	}
	var wg sync.WaitGroup
	var h2err error
	if l.h2 != nil {
		wg.Go(func() { h2err = l.h2.Shutdown(ctx) })
	}
	if l.std != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.std.Shutdown(ctx); err != nil {
				errs = append(errs, err)
			}
		}()
	}
	var h3err error
	if l.h3 != nil { // h3.go
		wg.Go(func() { h3err = l.h3.shutdown(ctx) })
	}
	ferr := l.fast.ShutdownWithContext(ctx)
	wg.Wait()
	errs = append(errs, ferr, h3err, h2err)
	select {
	case <-l.done:
		// Upgraded connections (WebSocket) have left the engines; they
		// run on until they close or ctx ends.
		if err := l.conns.waitClosed(ctx); err != nil {
			errs = append(errs, err)
		}
	case <-ctx.Done():
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

// linger makes c's eventual close a lingering one (lazyconn.Conn.Linger),
// looking through the TLS, sniffing and limiting wrappers.
func linger(c net.Conn) {
	for range 8 {
		if l, ok := c.(interface{ Linger() }); ok {
			l.Linger()
			return
		}
		w, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return
		}
		c = w.NetConn()
	}
}

var (
	errConflictingFraming = errors.New("both Transfer-Encoding and Content-Length")
	errFieldName          = errors.New("space in a field name")
	errTransferCoding     = errors.New("transfer coding other than chunked")
)

// fields checks the request's header lines as sent (raw) for what
// fasthttp's parser tolerates:
//
//   - a field name with a space inside ("X y: z"): a field name is a
//     token (RFC 9110, section 5.1), and an upstream could read the line
//     otherwise;
//   - Transfer-Encoding "identity", the one coding besides chunked that
//     fasthttp takes (as no coding at all, framing the body by
//     Content-Length): RFC 9112 has no such coding, and a request whose
//     final coding is not chunked is a 400 (section 6.3);
//   - on a chunked request, Content-Length: RFC 9112 lets a server ignore
//     it then, but a proxy in front may have framed the request by it, so
//     refusing both is the safe answer to request smuggling.
//
// One pass over the lines, a memchr or two each.
func fields(raw []byte, chunked bool) error {
	const cl, te = "content-length", "transfer-encoding"
	for len(raw) > 0 {
		i := bytes.IndexByte(raw, '\n')
		line := raw
		if i >= 0 {
			line, raw = raw[:i+1], raw[i+1:]
		} else {
			raw = nil
		}
		if line[0] == ' ' || line[0] == '\t' { // obs-fold continuation
			continue
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			continue
		}
		name := line[:colon]
		if bytes.IndexByte(name, ' ') >= 0 {
			return errFieldName
		}
		switch {
		case chunked && len(name) == len(cl) && bytes.EqualFold(name, []byte(cl)):
			return errConflictingFraming
		case !chunked && len(name) == len(te) && bytes.EqualFold(name, []byte(te)):
			return errTransferCoding
		}
	}
	return nil
}

type fastLogger struct{ log *slog.Logger }

func (f fastLogger) Printf(format string, args ...any) {
	f.log.Debug(strings.TrimSpace(fmt.Sprintf(format, args...)), "engine", "fasthttp")
}

// Addr returns the listener's bound address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Options returns the settings the listener was opened with.
func (l *Listener) Options() Options { return l.opts }

// Handler returns the request path every engine of the listener serves
// (what Deps.Handler returned).
func (l *Listener) Handler() exchange.Handler { return l.handler }

// Close closes the listener at once, without draining: the server
// undoing an Open whose generation did not go in.
func (l *Listener) Close() {
	_ = l.ln.Close()
	l.closeH3() // h3.go
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

// limitListener counts the connections open, so that a drain can wait
// for the long-lived ones (a WebSocket or other upgraded connection that
// the engines no longer track once it is handed off), and bounds them
// when max_conns is set: Accept waits for one to close, so that further
// clients wait in the kernel's accept queue. Unlike x/net/netutil's, its
// connections keep ReadFrom, so that sendfile(2) still works behind it.
type limitListener struct {
	net.Listener
	sem  chan struct{} // nil: no limit
	open atomic.Int64  // accepted and not yet closed
	done chan struct{}
	once sync.Once
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	l := &limitListener{Listener: ln, done: make(chan struct{})}
	if n > 0 {
		l.sem = make(chan struct{}, n)
	}
	return l
}

func (l *limitListener) Accept() (net.Conn, error) {
	if l.sem != nil {
		select {
		case l.sem <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		if l.sem != nil {
			<-l.sem
		}
		return nil, err
	}
	l.open.Add(1)
	return &limitedConn{Conn: c, l: l}, nil
}

func (l *limitListener) release() {
	l.open.Add(-1)
	if l.sem != nil {
		<-l.sem
	}
}

func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// waitClosed waits until every connection accepted is closed, or ctx
// ends. It polls: it runs once per drain, off the request path.
func (l *limitListener) waitClosed(ctx context.Context) error {
	for tick := time.Millisecond; l.open.Load() > 0; tick = min(2*tick, 100*time.Millisecond) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d connections still open: %w", l.open.Load(), ctx.Err())
		case <-time.After(tick):
		}
	}
	return nil
}

type limitedConn struct {
	net.Conn
	l      *limitListener
	closed atomic.Bool
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.l.release()
	}
	return err
}

func (c *limitedConn) ReadFrom(r io.Reader) (int64, error) { return readFrom(c.Conn, r) }

// NetConn returns the connection limited, for sockpeek.
func (c *limitedConn) NetConn() net.Conn { return c.Conn }
