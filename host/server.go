package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/frontdoor"
	"github.com/sluicehq/sluice/host/handover"
	"github.com/sluicehq/sluice/host/route"
	"github.com/sluicehq/sluice/runtime"
)

// Server owns the listeners and the current generation. Listeners
// outlive generations; a reload builds a new generation off the request
// path and swaps it in through one atomic pointer.
type Server struct {
	log *slog.Logger

	gen atomic.Pointer[Generation]

	mu        sync.Mutex // guards listeners and reloads; never taken on the request path
	listeners map[string]*listener
	draining  atomic.Bool
	// inherit holds the sockets from systemd or from the sluice this
	// process replaced; openListener takes from it before it binds.
	inherit *handover.Sockets
}

// Generation is everything one config load built: a route table per
// listener and what must be closed when the generation retires.
type Generation struct {
	// Tables maps a configured listen address to its sites and routes.
	Tables map[string]*route.Table
	// Listeners lists the listening addresses and their settings.
	Listeners []ListenerOptions
	// Grace bounds how long a retired generation waits for its requests.
	Grace time.Duration
	// Starters start what the generation's handlers run in the background
	// (proxy health checks, ACME sites obtaining certificates); Apply runs
	// them just before it swaps g in, so a generation that is built and
	// closed without serving (a refused reload, `sluice validate`) never
	// starts anything.
	Starters []func()
	// Closers are closed, in order, once the generation has drained.
	Closers []func() error
	// Info is the host's own data for admin endpoints (the config, say).
	Info any
	// Filters are the generation's Wasm filters by name.
	Filters map[string]*runtime.Filter
	// Doors maps a configured listen address to its front door: the
	// request policy every engine of the listener applies.
	Doors map[string]*frontdoor.Door

	tls      *tlsGen // certificates and TLS policies per listener (tls.go); nil without TLS
	inflight atomic.Int64
}

// NewServer returns a server with no listeners.
func NewServer(log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	return &Server{log: log, listeners: make(map[string]*listener)}
}

// Current returns the generation serving now (nil before the first Apply).
func (s *Server) Current() *Generation { return s.gen.Load() }

// Apply opens the listeners g needs, swaps g in, closes listeners no
// longer used, and retires the previous generation in the background once
// its in-flight requests have finished (or its grace period has passed).
// On error nothing has changed: the old generation keeps serving.
func (s *Server) Apply(g *Generation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g.Doors == nil { // a generation not made by Build: doors without trusted proxies
		g.Doors = make(map[string]*frontdoor.Door, len(g.Listeners))
	}
	for _, o := range g.Listeners {
		if g.Doors[o.Address] == nil {
			g.Doors[o.Address] = g.newDoor(o.Address, o.MaxRequestBody, nil)
		}
	}
	// The first generation is in place before its listeners open, so that
	// a client quick enough to connect in between is not answered 503.
	first := s.gen.Load() == nil
	if first {
		g.start()
		s.gen.Store(g)
	}
	want := make(map[string]ListenerOptions, len(g.Listeners))
	var opened []*listener
	for _, o := range g.Listeners {
		want[o.Address] = o
		if l, ok := s.listeners[o.Address]; ok {
			if l.opts != o {
				// The socket is kept (closing it could drop connections
				// waiting in its queue), so its engine settings stay.
				s.log.Warn("listener settings changed; they take effect on restart", "address", o.Address)
			}
			continue
		}
		l, err := s.openListener(o)
		if err != nil {
			for _, l := range opened {
				l.ln.Close()
				l.closeH3() // h3.go
				delete(s.listeners, l.opts.Address)
			}
			if first {
				s.gen.Store(nil) // the caller closes g, stopping what started
			}
			return err
		}
		s.listeners[o.Address] = l
		opened = append(opened, l)
	}
	var old *Generation
	if !first {
		g.start()
		old = s.gen.Swap(g)
	}
	for _, l := range opened { // only now: an inherited socket may have connections waiting
		l.serve()
	}
	for addr, l := range s.listeners {
		if _, ok := want[addr]; !ok {
			delete(s.listeners, addr)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), g.Grace)
				defer cancel()
				_ = l.shutdown(ctx)
				s.log.Info("listener closed", "address", addr)
			}()
		}
	}
	if old != nil {
		go s.retire(old)
	}
	return nil
}

// retire waits for a replaced generation's requests, then closes it.
func (s *Server) retire(g *Generation) {
	deadline := time.Now().Add(g.Grace)
	// A request may have loaded the old pointer just before the swap and
	// not yet counted itself; the first pause covers that window.
	for tick := 5 * time.Millisecond; ; tick = min(tick*2, 100*time.Millisecond) {
		time.Sleep(tick)
		if g.inflight.Load() == 0 || time.Now().After(deadline) {
			break
		}
	}
	g.close(s.log)
}

// start runs g's starters (see Starters).
func (g *Generation) start() {
	for _, start := range g.Starters {
		start()
	}
}

func (g *Generation) close(log *slog.Logger) {
	for _, c := range g.Closers {
		if err := c(); err != nil {
			log.Warn("closing generation", "error", err)
		}
	}
}

// Draining reports whether Shutdown has begun.
func (s *Server) Draining() bool { return s.draining.Load() }

// Shutdown stops accepting, drains in-flight requests until ctx ends, and
// closes the current generation.
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	s.mu.Lock()
	ls := s.listeners
	s.listeners = map[string]*listener{}
	s.mu.Unlock()
	var wg sync.WaitGroup
	errs := make(chan error, len(ls))
	for _, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- l.shutdown(ctx)
		}()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if g := s.gen.Swap(nil); g != nil {
		g.close(s.log)
	}
	return errors.Join(all...)
}

// dispatch is the request path's entry for every engine of a listener:
// current generation → the listener's front door (policy, site) → route
// by path → the route's handler (filters, then the native handler).
func (s *Server) dispatch(l *listener) exchange.Handler {
	addr := l.opts.Address
	return exchange.HandlerFunc(func(x exchange.Exchange) error {
		g := s.gen.Load()
		if g == nil {
			return errUnavailable
		}
		g.inflight.Add(1)
		defer g.inflight.Add(-1)
		d := g.Doors[addr]
		if d == nil {
			return errNotFound
		}
		return d.Serve(x, l.altSvc(), func(site *route.Site) error {
			p, err := canonicalPath(x, site) // path.go
			if err != nil {
				return err
			}
			r := site.Match(p)
			if r == nil {
				if site.NotFound != nil {
					return site.NotFound.ServeExchange(x)
				}
				return errNotFound
			}
			return r.Handler.ServeExchange(x)
		})
	})
}

var (
	errNotFound    = exchange.Errorf(http.StatusNotFound, "not found")
	errUnavailable = exchange.Errorf(http.StatusServiceUnavailable, "service unavailable")
)

// renderError is the one place that turns a handler's error into a
// response: the status it carries and a short plain-text body. Causes go
// to the log, never to the client.
func (s *Server) renderError(x exchange.Exchange, err error) {
	status := exchange.StatusOf(err)
	switch status {
	case http.StatusBadRequest, http.StatusRequestTimeout, http.StatusRequestEntityTooLarge,
		http.StatusRequestHeaderFieldsTooLarge, http.StatusHTTPVersionNotSupported:
		// The request may still be arriving, unread: end the connection
		// after this answer (lingering, on HTTP/1.1), as nginx does.
		exchange.CloseConnection(x)
	}
	msg := ""
	var e *exchange.Error
	if errors.As(err, &e) {
		msg = e.Message
		if e.Err != nil && status >= 500 {
			s.log.Warn("request failed", "method", string(x.Method()), "path", string(x.Path()), "status", status, "error", e.Err)
		}
	} else {
		s.log.Error("request failed", "method", string(x.Method()), "path", string(x.Path()), "error", err)
	}
	if msg == "" {
		msg = http.StatusText(status)
		if msg == "" {
			msg = fmt.Sprintf("status %d", status)
		}
	}
	x.ResetBody()
	x.SetStatus(status)
	x.DelResponseHeader("Content-Encoding")
	x.DelResponseHeader("ETag")
	x.DelResponseHeader("Last-Modified")
	x.SetResponseHeader("Content-Type", "text/plain; charset=utf-8")
	x.SetResponseHeader("X-Content-Type-Options", "nosniff")
	x.SetBody([]byte(msg + "\n"))
}
