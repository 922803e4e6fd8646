package listen

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
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
	// toFast and toH2 receive the connections the accept loop sorted:
	// HTTP/1.1 for fasthttp, HTTP/2 for whichever HTTP/2 engine the
	// listener has (h2, or std); nil when fasthttp serves the socket
	// itself.
	toFast, toH2 *connQueue
	base         *tls.Config // nil on plain listeners
	handshake    time.Duration
	done         chan struct{}  // closed when every serve loop has returned
	h3           *h3Server      // HTTP/3 on the same port (h3.go); nil unless HTTP3
	conns        *limitListener // counts (and with max_conns bounds) the TCP connections
	log          *slog.Logger
	// draining is set when Shutdown starts: every HTTP/1.1 response from
	// then on carries Connection: close (fastHandler). grace is how long
	// Shutdown leaves idle keep-alive connections to send their next
	// request before it closes them (drainGrace).
	draining atomic.Bool
	grace    time.Duration

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
	l := &Listener{opts: o, tls: d.TLS, raw: raw, done: make(chan struct{}), log: d.Log, grace: drainGrace}
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
		l.toFast, l.toH2 = newConnQueue(raw.Addr()), newConnQueue(raw.Addr())
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
			serve("h2", func() error { return l.h2.Serve(l.toH2) })
		} else {
			serve("net/http", func() error { return l.std.Serve(l.toH2) })
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

// drainGrace is how long a draining listener leaves an idle HTTP/1.1
// keep-alive connection for its next request, which is then answered
// with Connection: close. HTTP/1.1 has no way to tell an idle connection
// to go away: closing it while the client is sending its next request
// makes that request fail (a reset, or an end of stream instead of the
// response), which a client under load meets at every upgrade. A client
// in the middle of a sequence asks again within milliseconds, so past
// the grace only the truly idle are closed, and the race is theirs
// alone (RFC 9112, section 9.6, lets a client retry then).
const drainGrace = time.Second

// Shutdown stops accepting, lets in-flight requests finish, and closes
// the keep-alive connections: HTTP/2 ones with GOAWAY (the last stream
// id; streams in flight finish), HTTP/1.1 ones after their next
// response, which carries Connection: close, or once idle for the
// grace (drainGrace). It waits for upgraded connections (WebSocket) to
// close and gives up when ctx ends.
func (l *Listener) Shutdown(ctx context.Context) error {
	var errs []error
	l.draining.Store(true)
	_ = l.ln.Close() // no new connections, on any engine
	var wg sync.WaitGroup
	var h2err, stderr error
	if l.h2 != nil {
		wg.Go(func() { h2err = l.h2.Shutdown(ctx) })
	}
	if l.std != nil {
		wg.Go(func() { stderr = l.std.Shutdown(ctx) })
	}
	var h3err error
	if l.h3 != nil { // h3.go
		wg.Go(func() { h3err = l.h3.shutdown(ctx) })
	}
	l.awaitIdle(ctx)
	// fasthttp closes the connections still idle and waits for the
	// others; the listener it would close is closed already.
	ferr := l.fast.ShutdownWithContext(ctx)
	if errors.Is(ferr, net.ErrClosed) {
		ferr = nil
	}
	wg.Wait()
	errs = append(errs, ferr, stderr, h3err, h2err)
	served := false // every serve loop has returned
	select {
	case <-l.done:
		served = true
	case <-ctx.Done():
		select { // both may be ready; the loops' end says more
		case <-l.done:
			served = true
		default:
		}
	}
	if served {
		// Upgraded connections (WebSocket) have left the engines; they
		// run on until they close or ctx ends.
		if err := l.conns.waitClosed(ctx); err != nil {
			errs = append(errs, err)
		}
	} else {
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

// awaitIdle gives the keep-alive connections the grace to come back for
// their next request, ending early when none is left open. It takes at
// most half of what ctx has left, the rest being for the requests in
// flight and upgraded connections (which the count includes). It polls,
// once per drain.
func (l *Listener) awaitIdle(ctx context.Context) {
	grace := l.grace
	if dl, ok := ctx.Deadline(); ok {
		grace = min(grace, time.Until(dl)/2)
	}
	end := time.NewTimer(grace)
	defer end.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for l.conns.open.Load() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-end.C:
			return
		case <-tick.C:
		}
	}
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
