package host

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/generation"
	"github.com/sluicehq/sluice/host/handover"
	"github.com/sluicehq/sluice/host/listen"
	"github.com/sluicehq/sluice/host/tlsconf"
)

// Server owns the listeners and the current generation. Listeners
// outlive generations; a reload builds a new generation off the request
// path and swaps it in through one atomic pointer.
type Server struct {
	log *slog.Logger

	gen atomic.Pointer[generation.Generation]

	mu        sync.Mutex // guards listeners and reloads; never taken on the request path
	listeners map[string]*listen.Listener
	draining  atomic.Bool
	// inherit holds the sockets from systemd or from the sluice this
	// process replaced; a listener takes from it before it binds.
	inherit *handover.Sockets
	// early, when set, wraps each listener's request path to log and
	// count the answers no route saw (observe's WrapEarly).
	early func(exchange.Handler) exchange.Handler
}

// NewServer returns a server with no listeners.
func NewServer(log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	return &Server{log: log, listeners: make(map[string]*listen.Listener)}
}

// Current returns the generation serving now (nil before the first Apply).
func (s *Server) Current() *generation.Generation { return s.gen.Load() }

// Apply opens the listeners g needs, swaps g in, closes listeners no
// longer used, and retires the previous generation in the background once
// its in-flight requests have finished (or its grace period has passed).
// On error nothing has changed: the old generation keeps serving.
func (s *Server) Apply(g *generation.Generation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g.DefaultDoors()
	// The first generation is in place before its listeners open, so that
	// a client quick enough to connect in between is not answered 503.
	first := s.gen.Load() == nil
	if first {
		g.Start()
		s.gen.Store(g)
	}
	want := make(map[string]listen.Options, len(g.Listeners))
	var opened []*listen.Listener
	for _, cl := range g.Listeners {
		o := listenOptions(cl)
		want[o.Address] = o
		if l, ok := s.listeners[o.Address]; ok {
			if l.Options() != o {
				// The socket is kept (closing it could drop connections
				// waiting in its queue), so its engine settings stay.
				s.log.Warn("listener settings changed; they take effect on restart", "address", o.Address)
			}
			continue
		}
		l, err := s.openListener(o)
		if err != nil {
			for _, l := range opened {
				l.Close()
				delete(s.listeners, l.Options().Address)
			}
			if first {
				s.gen.Store(nil) // the caller closes g, stopping what started
			}
			return err
		}
		s.listeners[o.Address] = l
		opened = append(opened, l)
	}
	var old *generation.Generation
	if !first {
		g.Start()
		old = s.gen.Swap(g)
	}
	for _, l := range opened { // only now: an inherited socket may have connections waiting
		l.Serve()
	}
	for addr, l := range s.listeners {
		if _, ok := want[addr]; !ok {
			delete(s.listeners, addr)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), g.Grace)
				defer cancel()
				_ = l.Shutdown(ctx)
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
func (s *Server) retire(g *generation.Generation) {
	deadline := time.Now().Add(g.Grace)
	// A request may have loaded the old pointer just before the swap and
	// not yet counted itself; the first pause covers that window.
	for tick := 5 * time.Millisecond; ; tick = min(tick*2, 100*time.Millisecond) {
		time.Sleep(tick)
		if g.InFlight() == 0 || time.Now().After(deadline) {
			break
		}
	}
	g.Close(s.log)
}

// Draining reports whether Shutdown has begun.
func (s *Server) Draining() bool { return s.draining.Load() }

// Shutdown stops accepting, drains in-flight requests until ctx ends, and
// closes the current generation.
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	s.mu.Lock()
	ls := s.listeners
	s.listeners = map[string]*listen.Listener{}
	s.mu.Unlock()
	var wg sync.WaitGroup
	errs := make(chan error, len(ls))
	for _, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- l.Shutdown(ctx)
		}()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if g := s.gen.Swap(nil); g != nil {
		g.Close(s.log)
	}
	return errors.Join(all...)
}

// openListener opens the listener of o, serving dispatch and the
// current generation's certificates.
func (s *Server) openListener(o listen.Options) (*listen.Listener, error) {
	return listen.Open(o, listen.Deps{
		Handler: func(altSvc string) exchange.Handler {
			if s.early != nil {
				return s.early(s.dispatch(o.Address, altSvc))
			}
			return s.dispatch(o.Address, altSvc)
		},
		TLS: func() *tlsconf.Table {
			if g := s.gen.Load(); g != nil {
				return g.TLSTable(o.Address)
			}
			return nil
		},
		Inherit: s.inherit,
		Log:     s.log,
	})
}

// listenOptions are the engine settings of a configured listener.
func listenOptions(l *config.Listener) listen.Options {
	return listen.Options{
		Address:           l.Address,
		ReadTimeout:       l.ReadTimeout,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		MaxRequestBody:    l.MaxRequestBody,
		MaxConns:          l.MaxConns,
		TLS:               l.TLS,
		H2C:               l.H2C,
		HTTP3:             l.HTTP3,
		TCPNoPush:         l.TCPNoPush,
		HTTP2Engine:       l.HTTP2Engine,
	}
}

// dispatch is the request path's entry for every engine of the listener
// configured as addr: the current generation, one atomic load, then the
// generation's own path (generation.Generation.Serve).
func (s *Server) dispatch(addr, altSvc string) exchange.Handler {
	return exchange.HandlerFunc(func(x exchange.Exchange) error {
		g := s.gen.Load()
		if g == nil {
			return errUnavailable
		}
		return g.Serve(x, addr, altSvc)
	})
}

var errUnavailable = exchange.Errorf(http.StatusServiceUnavailable, "service unavailable")

// Addr returns the bound address of a configured listener, or nil.
func (s *Server) Addr(configured string) net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.listeners[configured]; ok {
		return l.Addr()
	}
	return nil
}

// handoverFiles returns duplicates of the listeners' sockets (TCP, and
// UDP for HTTP/3), named for handover.Start, for a successor process.
func (s *Server) handoverFiles() ([]handover.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var files []handover.File
	for _, l := range s.listeners {
		fs, err := l.Files()
		if err != nil {
			closeFiles(files)
			return nil, err
		}
		files = append(files, fs...)
	}
	return files, nil
}

func closeFiles(files []handover.File) {
	for _, f := range files {
		_ = f.File.Close()
	}
}
