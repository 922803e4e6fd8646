package admin

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/host/admin/status"
)

// Options configure New.
type Options struct {
	// Listen is the address to listen on ("127.0.0.1:2019"); "" means
	// "127.0.0.1:2019". Port 0 picks a free port (see Server.Addr).
	// "unix/PATH" (as Caddy writes it: "unix//run/sluice/admin.sock")
	// is a unix socket at PATH, which only users that may write to it
	// can reach (SocketMode).
	Listen string
	// SocketMode is the unix socket's file mode; 0 means 0600 (the
	// server's user only).
	SocketMode os.FileMode
	// Token, when set, must be sent as "Authorization: Bearer TOKEN" on
	// every request except /healthz and /readyz.
	Token string
	// Metrics serves /metrics; nil answers 404 (metrics disabled).
	Metrics http.Handler
	// Reload reloads the config for POST /reload; nil answers 501. An
	// error wrapped by Invalid is the user's (400), others are ours (500);
	// the error text is the body either way.
	Reload func() error
	// Config returns the effective config, secrets redacted, for /config;
	// nil answers 404. A value with a JSON() ([]byte, error) method is
	// written with it, others with encoding/json.
	Config func() any
	// Filters returns the filters' state (module digests, pool sizes,
	// invocations, last swap) for /filters; nil answers "[]".
	Filters func() any
	// Status returns the live state for GET /status, GET /upstreams and
	// the status page (GET /); nil answers 404 for them.
	Status func() *status.Status
	// Ready reports whether the server takes traffic; /readyz answers 503
	// when it returns false (draining). nil means always ready.
	Ready func() bool
	// Unready, when set and Ready is true, names what the server lacks
	// to serve well ("store lost"); /readyz answers 503 with it. ""
	// means nothing.
	Unready func() string
	// Upgrade replaces the running binary for POST /upgrade (a new
	// process takes the listeners over and this one drains); it returns
	// what to tell the caller. nil answers 501. An error wrapped by
	// Conflict is a 409 (one is in progress, or this process drains).
	Upgrade func() (string, error)
	// Listener, when set, is served instead of listening on Listen: the
	// socket inherited from systemd or from the process this replaced.
	Listener net.Listener
	// Log receives admin events; nil means slog.Default().
	Log *slog.Logger
}

// Server is the admin HTTP server.
type Server struct {
	o    Options
	mux  *http.ServeMux
	http *http.Server

	mu    sync.Mutex
	ln    net.Listener
	done  chan struct{}
	close sync.Once
	err   error   // of the first Close
	names origins // the Host and Origin values accepted; bound after Start
}

// DefaultListen is the admin address when Options.Listen is empty.
const DefaultListen = "127.0.0.1:2019"

// New returns an admin server; Start opens its listener.
func New(o Options) (*Server, error) {
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	if path, ok := UnixPath(o.Listen); ok {
		if path == "" {
			return nil, fmt.Errorf("admin: listen %q: no socket path", o.Listen)
		}
	} else if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		return nil, fmt.Errorf("admin: listen %q: %w", o.Listen, err)
	}
	if o.SocketMode == 0 {
		o.SocketMode = 0o600
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	s := &Server{o: o, mux: http.NewServeMux(), names: newOrigins(o.Listen, nil)}
	s.mux.HandleFunc("/healthz", s.healthz)
	s.mux.HandleFunc("/readyz", s.readyz)
	s.mux.HandleFunc("/metrics", s.metrics)
	s.mux.HandleFunc("/config", s.config)
	s.mux.HandleFunc("/filters", s.filters)
	s.mux.HandleFunc("/reload", s.reload)
	s.mux.HandleFunc("/upgrade", s.upgrade)
	s.mux.HandleFunc("/status", s.status)
	s.mux.HandleFunc("/upstreams", s.upstreams)
	s.mux.HandleFunc("/ui/", s.page)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" && s.o.Status != nil {
			s.page(w, r)
			return
		}
		http.Error(w, "not found; try / (the status page), /status, /upstreams, /healthz, /readyz, /metrics, /config, /filters, POST /reload or POST /upgrade", http.StatusNotFound)
	})
	s.http = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(o.Log.Handler(), slog.LevelDebug),
	}
	return s, nil
}

// Handler returns the admin API as an http.Handler (the Host, Origin and
// token checks included), for tests and for mounting elsewhere.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		s.mu.Lock()
		names := s.names
		s.mu.Unlock()
		// A page on another site must not reach the API through the
		// visitor's browser: DNS rebinding shows up as a foreign Host,
		// a cross-site request as a foreign Origin (as Caddy's admin).
		if !names.host(r.Host) {
			s.o.Log.Warn("admin request refused: host not allowed", "host", r.Host, "remote", r.RemoteAddr)
			http.Error(w, "host not allowed", http.StatusForbidden)
			return
		}
		if o, ok := r.Header["Origin"]; ok && !names.origin(o) {
			s.o.Log.Warn("admin request refused: origin not allowed", "origin", strings.Join(o, ", "), "remote", r.RemoteAddr)
			http.Error(w, "origin not allowed", http.StatusForbidden)
			return
		}
		if s.o.Token != "" && r.URL.Path != "/healthz" && r.URL.Path != "/readyz" && !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sluice admin"`)
			if isPage(r.URL.Path) {
				// A browser cannot send a bearer token when it opens a
				// page; it asks for Basic credentials (the token as
				// password) and sends them with the page's own calls.
				w.Header().Add("WWW-Authenticate", `Basic realm="sluice admin", charset="UTF-8"`)
			}
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		s.mux.ServeHTTP(w, r)
	})
}

// authorized reports whether r carries the token: "Bearer TOKEN", or
// Basic credentials with the token as password (any user name), which
// is what a browser sends for the status page.
func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		_, pass, ok := r.BasicAuth()
		return ok && subtle.ConstantTimeCompare([]byte(pass), []byte(s.o.Token)) == 1
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(h[len(prefix):])), []byte(s.o.Token)) == 1
}

// isPage reports whether path is the status page or one of its files.
func isPage(path string) bool { return path == "/" || strings.HasPrefix(path, "/ui/") }

// Start listens and serves in the background.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return errors.New("admin: already started")
	}
	ln := s.o.Listener
	if ln == nil {
		var err error
		if path, ok := UnixPath(s.o.Listen); ok {
			ln, err = listenUnix(path, s.o.SocketMode)
		} else {
			ln, err = net.Listen("tcp", s.o.Listen)
		}
		if err != nil {
			return fmt.Errorf("admin: %w", err)
		}
	}
	if u, ok := ln.(*net.UnixListener); ok {
		// An inherited socket: it outlives this process's listener (a
		// successor serves the same file), and it is known by its path,
		// not by the private name it was bound under.
		u.SetUnlinkOnClose(false)
		if path, ok := UnixPath(s.o.Listen); ok {
			ln = renamed{u, &net.UnixAddr{Name: path, Net: "unix"}}
		}
	}
	s.ln, s.done = ln, make(chan struct{})
	s.names = newOrigins(s.o.Listen, ln.Addr())
	if !loopback(ln.Addr()) && s.o.Token == "" {
		s.o.Log.Warn("admin API listens beyond loopback without a token: anyone who reaches it can reload and read the config", "address", ln.Addr().String())
	}
	go func() {
		defer close(s.done)
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.o.Log.Error("admin listener stopped", "address", ln.Addr().String(), "error", err)
		}
	}()
	s.o.Log.Info("admin API listening", "address", ln.Addr().String())
	return nil
}

func loopback(a net.Addr) bool {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true // its file mode decides who reaches it
	}
	return false
}

// UnixPath returns the socket path of a "unix/PATH" listen address.
func UnixPath(listen string) (string, bool) {
	return strings.CutPrefix(listen, "unix/")
}

// listenUnix listens on a unix socket at path with the given mode. The
// socket is bound under a private name beside path, given its mode and
// only then renamed into place, so no one connects in the moment before
// the mode is set (whatever the umask). A socket already at path is
// replaced unless a server answers on it; any other file is left alone.
func listenUnix(path string, mode os.FileMode) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("unix socket %q: a file that is not a socket is there", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("unix socket %q: another server answers on it", path)
		}
	}
	var b [8]byte
	rand.Read(b[:])
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+"."+hex.EncodeToString(b[:]))
	ln, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, err
	}
	u := ln.(*net.UnixListener)
	u.SetUnlinkOnClose(false)
	if err = os.Chmod(tmp, mode); err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("unix socket %q: %w", path, err)
	}
	return renamed{u, &net.UnixAddr{Name: path, Net: "unix"}}, nil
}

// renamed is a unix listener known by the path it was renamed to.
type renamed struct {
	*net.UnixListener
	addr *net.UnixAddr
}

func (r renamed) Addr() net.Addr { return r.addr }

// Conn returns the listening socket, to hand over to a successor
// process; nil before Start or when it is not a socket.
func (s *Server) Conn() syscall.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, _ := s.ln.(syscall.Conn)
	return c
}

// Addr returns the bound address, or nil before Start.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Close stops the server: in-flight admin requests get a few seconds to
// finish (a reload in progress runs on regardless). Only the first call
// does anything; later ones return its result.
func (s *Server) Close() error {
	s.mu.Lock()
	started := s.ln != nil
	s.mu.Unlock()
	if !started {
		return nil
	}
	s.close.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.err = s.http.Shutdown(ctx)
		if s.err != nil {
			s.err = errors.Join(s.err, s.http.Close())
		}
		<-s.done
	})
	return s.err
}

// Conflict marks err as a request that cannot run now: POST /upgrade
// answers 409 for it.
func Conflict(err error) error {
	if err == nil {
		return nil
	}
	return &ConflictError{Err: err}
}

// ConflictError is an upgrade refused because of the server's state.
type ConflictError struct{ Err error }

func (e *ConflictError) Error() string { return e.Err.Error() }
func (e *ConflictError) Unwrap() error { return e.Err }

// Invalid marks err as a problem with the config (the caller's): POST
// /reload answers 400 for it instead of 500.
func Invalid(err error) error {
	if err == nil {
		return nil
	}
	return &InvalidError{Err: err}
}

// InvalidError is a reload refused because of the config.
type InvalidError struct{ Err error }

func (e *InvalidError) Error() string { return e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }

func readOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

func text(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	if readOnly(w, r) {
		text(w, http.StatusOK, "ok\n")
	}
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if !readOnly(w, r) {
		return
	}
	if s.o.Ready != nil && !s.o.Ready() {
		text(w, http.StatusServiceUnavailable, "draining\n")
		return
	}
	if s.o.Unready != nil {
		if why := s.o.Unready(); why != "" {
			text(w, http.StatusServiceUnavailable, why+"\n")
			return
		}
	}
	text(w, http.StatusOK, "ready\n")
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if !readOnly(w, r) {
		return
	}
	if s.o.Metrics == nil {
		http.Error(w, "metrics are disabled (telemetry { metrics { prometheus = false } })", http.StatusNotFound)
		return
	}
	s.o.Metrics.ServeHTTP(w, r)
}

func (s *Server) config(w http.ResponseWriter, r *http.Request) {
	if !readOnly(w, r) {
		return
	}
	if s.o.Config == nil {
		http.Error(w, "no config", http.StatusNotFound)
		return
	}
	writeJSON(w, s.o.Config())
}

func (s *Server) filters(w http.ResponseWriter, r *http.Request) {
	if !readOnly(w, r) {
		return
	}
	var v any = []any{}
	if s.o.Filters != nil {
		v = s.o.Filters()
	}
	writeJSON(w, v)
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	if !readOnly(w, r) {
		return
	}
	if s.o.Status == nil {
		http.Error(w, "no status", http.StatusNotFound)
		return
	}
	writeJSON(w, s.o.Status())
}

func (s *Server) upstreams(w http.ResponseWriter, r *http.Request) {
	if !readOnly(w, r) {
		return
	}
	if s.o.Status == nil {
		http.Error(w, "no status", http.StatusNotFound)
		return
	}
	ups := s.o.Status().Upstreams
	if ups == nil {
		ups = []status.Upstream{}
	}
	writeJSON(w, ups)
}

// pageCSP lets the page load its own script and style and call the API
// on its own origin, nothing else: no inline code, no other site, no
// framing.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// page serves the status page (GET /) and its files (GET /ui/...)
// from status.Assets.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	if !readOnly(w, r) {
		return
	}
	name := strings.TrimPrefix(r.URL.Path, "/ui/")
	if r.URL.Path == "/" {
		name = "index.html"
	}
	ctype := map[string]string{
		"index.html": "text/html; charset=utf-8",
		"status.css": "text/css; charset=utf-8",
		"status.js":  "text/javascript; charset=utf-8",
	}[name]
	b, err := fs.ReadFile(status.Assets, name)
	if s.o.Status == nil || ctype == "" || err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Security-Policy", pageCSP)
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(b)
}

func writeJSON(w http.ResponseWriter, v any) {
	var b []byte
	var err error
	if j, ok := v.(interface{ JSON() ([]byte, error) }); ok {
		b, err = j.JSON()
	} else {
		b, err = json.MarshalIndent(v, "", "  ")
	}
	if err != nil {
		http.Error(w, "encode: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if len(b) == 0 || b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	_, _ = w.Write(b)
}

// postOnly answers 405 to anything but POST and reports whether r is one.
func postOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodPost {
		return true
	}
	w.Header().Set("Allow", "POST")
	http.Error(w, "method not allowed: use POST", http.StatusMethodNotAllowed)
	return false
}

// line answers msg as one line of text.
func line(w http.ResponseWriter, status int, msg string) {
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	text(w, status, msg)
}

func (s *Server) reload(w http.ResponseWriter, r *http.Request) {
	if !postOnly(w, r) {
		return
	}
	if s.o.Reload == nil {
		http.Error(w, "reload is not available", http.StatusNotImplemented)
		return
	}
	err := s.o.Reload()
	if err == nil {
		text(w, http.StatusOK, "reloaded\n")
		return
	}
	status := http.StatusInternalServerError
	var inv *InvalidError
	if errors.As(err, &inv) {
		status = http.StatusBadRequest
	}
	line(w, status, err.Error())
}

func (s *Server) upgrade(w http.ResponseWriter, r *http.Request) {
	if !postOnly(w, r) {
		return
	}
	if s.o.Upgrade == nil {
		http.Error(w, "upgrade is not available", http.StatusNotImplemented)
		return
	}
	msg, err := s.o.Upgrade()
	status := http.StatusOK
	if err != nil {
		status, msg = http.StatusInternalServerError, err.Error()
		var c *ConflictError
		if errors.As(err, &c) {
			status = http.StatusConflict
		}
	}
	line(w, status, msg)
}
