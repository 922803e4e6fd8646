package h2

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
)

// Options configure a Server. Zero values take the defaults noted.
type Options struct {
	// Handler serves every request; OnError renders what it returns.
	Handler exchange.Handler
	OnError func(exchange.Exchange, error)
	// TLS tells that the listener terminates TLS (for IsTLS when the
	// connection given is not a *tls.Conn).
	TLS bool
	// MaxConcurrentStreams caps the streams a client may have open on
	// one connection (SETTINGS_MAX_CONCURRENT_STREAMS); default 250.
	MaxConcurrentStreams uint32
	// MaxHeaderBytes bounds a request's header list (as RFC 9113 counts
	// it, SETTINGS_MAX_HEADER_LIST_SIZE): larger gets 431. Default 16 KiB.
	MaxHeaderBytes int
	// StreamWindow and ConnWindow are the receive windows advertised for
	// each stream and for the connection; defaults 256 KiB and 1 MiB.
	StreamWindow int32
	ConnWindow   int32
	// ReadHeaderTimeout bounds the wait for the preface and the first
	// request, and for the rest of a header block once it has begun;
	// default 10 s. ReadTimeout bounds the wait for each part of a request
	// body (0: none). WriteTimeout bounds each write to the connection and
	// a response waiting for flow-control credit (0: none). IdleTimeout
	// closes a connection without open streams (0: none).
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxResets is how many streams a client may reset (or have refused)
	// within ResetWindow before the connection is closed with GOAWAY
	// ENHANCE_YOUR_CALM (CVE-2023-44487, rapid reset); defaults
	// 4×MaxConcurrentStreams and 10 s. MaxControl is the same bound for
	// PING and SETTINGS frames (floods), and, counted apart, for empty
	// DATA frames and for DATA frames on closed streams (each answered
	// with RST_STREAM); default 1000.
	MaxResets int
	// NoConnectProtocol leaves SETTINGS_ENABLE_CONNECT_PROTOCOL out of
	// the server's SETTINGS: a request with :protocol (extended CONNECT,
	// RFC 8441: WebSockets over HTTP/2) is then malformed.
	NoConnectProtocol bool
	MaxControl        int
	ResetWindow       time.Duration
	Log               *slog.Logger
}

func (o *Options) defaults() {
	if o.MaxConcurrentStreams == 0 {
		o.MaxConcurrentStreams = 250
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = 16 << 10
	}
	if o.StreamWindow <= 0 {
		o.StreamWindow = 256 << 10
	}
	if o.ConnWindow <= 0 {
		o.ConnWindow = 1 << 20
	}
	if o.ConnWindow < o.StreamWindow {
		o.ConnWindow = o.StreamWindow
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = 10 * time.Second
	}
	if o.MaxResets <= 0 {
		o.MaxResets = 4 * int(o.MaxConcurrentStreams)
	}
	if o.MaxControl <= 0 {
		o.MaxControl = 1000
	}
	if o.ResetWindow <= 0 {
		o.ResetWindow = 10 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.OnError == nil {
		o.OnError = func(x exchange.Exchange, err error) {
			x.ResetBody()
			x.SetStatus(exchange.StatusOf(err))
		}
	}
}

// Server serves HTTP/2 connections.
type Server struct {
	o       Options
	mu      sync.Mutex
	conns   map[*conn]struct{}
	closing bool
	wg      sync.WaitGroup // connections and their handlers
}

// New returns a Server with o's settings.
func New(o Options) *Server {
	o.defaults()
	return &Server{o: o, conns: map[*conn]struct{}{}}
}

// Serve accepts connections from ln and serves each in a goroutine,
// until ln is closed (net.ErrClosed) or Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		if !s.admit(c) {
			continue
		}
		go func() {
			defer s.wg.Done()
			s.serveConn(c)
		}()
	}
}

// ServeConn serves one connection until it ends; the client's preface
// is still to be read.
func (s *Server) ServeConn(c net.Conn) {
	if !s.admit(c) {
		return
	}
	defer s.wg.Done()
	s.serveConn(c)
}

func (s *Server) serveConn(nc net.Conn) {
	c := newConn(s, nc)
	if s.track(c) {
		c.serve()
	}
}

// admit counts a new connection in (Shutdown waits for it; the caller
// calls s.wg.Done when it ends) unless the server is shutting down, in
// which case it closes nc and reports false.
func (s *Server) admit(nc net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		_ = nc.Close()
		return false
	}
	s.wg.Add(1)
	return true
}

// track lists c for Shutdown's GOAWAY unless Shutdown began since admit,
// in which case it closes c's socket and reports false.
func (s *Server) track(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		_ = c.nc.Close()
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Shutdown sends GOAWAY on every connection, lets the streams in flight
// finish, and closes each connection once it has none; what is still
// open when ctx ends is closed.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.goAway()
	}
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			_ = c.nc.Close()
		}
		s.mu.Unlock()
		return ctx.Err()
	}
}

// tlsState returns the connection's TLS state, looking through wrappers.
func tlsState(c net.Conn) *tls.ConnectionState {
	for range 8 {
		if t, ok := c.(interface{ ConnectionState() tls.ConnectionState }); ok {
			cs := t.ConnectionState()
			return &cs
		}
		w, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		c = w.NetConn()
	}
	return nil
}

var errHandedOff = errors.New("h2: read loop handed off")
