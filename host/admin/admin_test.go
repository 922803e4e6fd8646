package admin

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

type jsonValue struct{}

func (jsonValue) JSON() ([]byte, error) { return []byte(`{"admin":{"token":"REDACTED"}}`), nil }

func newTestServer(t *testing.T, token string) (*Server, *atomic.Bool, *atomic.Value) {
	t.Helper()
	ready := new(atomic.Bool)
	ready.Store(true)
	reloadErr := new(atomic.Value)
	s, err := New(Options{
		Listen:  "127.0.0.1:0",
		Token:   token,
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "up 1\n") }),
		Reload: func() error {
			if e, ok := reloadErr.Load().(errBox); ok {
				return e.error
			}
			return nil
		},
		Config:  func() any { return jsonValue{} },
		Filters: func() any { return []map[string]any{{"name": "auth", "digest": "sha256:ab", "pool": 4}} },
		Ready:   ready.Load,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, ready, reloadErr
}

type errBox struct{ error }

// newRequest is httptest.NewRequest with the Host a local client sends.
func newRequest(method, path string) *http.Request {
	r := httptest.NewRequest(method, path, nil)
	r.Host = "127.0.0.1:2019"
	return r
}

func TestEndpoints(t *testing.T) {
	s, ready, reloadErr := newTestServer(t, "")
	h := s.Handler()
	for _, c := range []struct {
		name, method, path string
		setup              func()
		status             int
		body, ctype        string
	}{
		{"healthz", "GET", "/healthz", nil, 200, "ok\n", "text/plain"},
		{"readyz", "GET", "/readyz", nil, 200, "ready\n", "text/plain"},
		{"readyz draining", "GET", "/readyz", func() { ready.Store(false) }, 503, "draining\n", "text/plain"},
		{"metrics", "GET", "/metrics", nil, 200, "up 1\n", ""},
		{"config via JSON()", "GET", "/config", nil, 200, `{"admin":{"token":"REDACTED"}}` + "\n", "application/json"},
		{"filters", "GET", "/filters", nil, 200, `"digest": "sha256:ab"`, "application/json"},
		{"reload", "POST", "/reload", nil, 200, "reloaded\n", "text/plain"},
		{"reload GET", "GET", "/reload", nil, 405, "", ""},
		{"config POST", "POST", "/config", nil, 405, "", ""},
		{"reload invalid", "POST", "/reload", func() {
			reloadErr.Store(errBox{Invalid(errors.New("sluice.hcl:3:5: unknown block \"sit\""))})
		}, 400, "sluice.hcl:3:5: unknown block \"sit\"\n", "text/plain"},
		{"reload failed", "POST", "/reload", func() {
			reloadErr.Store(errBox{errors.New("listener \":80\": permission denied")})
		}, 500, "permission denied", "text/plain"},
		{"unknown", "GET", "/nope", nil, 404, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.setup != nil {
				c.setup()
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, newRequest(c.method, c.path))
			if rec.Code != c.status {
				t.Errorf("status %d, want %d (%s)", rec.Code, c.status, rec.Body)
			}
			if !strings.Contains(rec.Body.String(), c.body) {
				t.Errorf("body %q, want it to contain %q", rec.Body, c.body)
			}
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, c.ctype) {
				t.Errorf("Content-Type %q, want %q", ct, c.ctype)
			}
		})
	}
}

func TestDisabledParts(t *testing.T) {
	s, err := New(Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{"/metrics": 404, "/config": 404, "/filters": 200, "/readyz": 200} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, newRequest("GET", path))
		if rec.Code != want {
			t.Errorf("%s: %d, want %d", path, rec.Code, want)
		}
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, newRequest("POST", "/reload"))
	if rec.Code != 501 {
		t.Errorf("reload without a func: %d, want 501", rec.Code)
	}
}

func TestToken(t *testing.T) {
	s, _, _ := newTestServer(t, "s3cret")
	h := s.Handler()
	for _, c := range []struct {
		path, auth string
		status     int
	}{
		{"/healthz", "", 200},
		{"/readyz", "", 200},
		{"/metrics", "", 401},
		{"/config", "Bearer wrong", 401},
		{"/config", "Basic s3cret", 401},
		{"/config", "Bearer s3cret", 200},
		{"/metrics", "bearer s3cret", 200},
		{"/reload", "", 401},
	} {
		method := "GET"
		if c.path == "/reload" {
			method = "POST"
		}
		req := newRequest(method, c.path)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.status {
			t.Errorf("%s with %q: %d, want %d", c.path, c.auth, rec.Code, c.status)
		}
		if rec.Code == 401 && rec.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", c.path)
		}
	}
}

func TestStartClose(t *testing.T) {
	s, _, _ := newTestServer(t, "")
	if s.Addr() != nil {
		t.Error("Addr before Start")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err == nil {
		t.Error("second Start succeeded")
	}
	resp, err := http.Get("http://" + s.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "ok\n" {
		t.Errorf("healthz over TCP: %d %q", resp.StatusCode, b)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + s.Addr().String() + "/healthz"); err == nil {
		t.Error("still serving after Close")
	}
}

func TestBadListen(t *testing.T) {
	if _, err := New(Options{Listen: "nonsense"}); err == nil {
		t.Error("listen \"nonsense\" accepted")
	}
}

// TestHostOrigin: the admin API answers only requests that name it, so
// a page elsewhere cannot drive it through a browser (DNS rebinding: a
// foreign Host; cross-site requests: a foreign Origin).
func TestHostOrigin(t *testing.T) {
	type tc struct {
		name, method, path, host, origin string
		status                           int
	}
	var reloads atomic.Int32
	start := func(t *testing.T, listen string) (*Server, string) {
		s, err := New(Options{
			Listen: listen,
			Token:  "t", // quiets the beyond-loopback warning
			Reload: func() error { reloads.Add(1); return nil },
			Config: func() any { return jsonValue{} },
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		_, port, _ := net.SplitHostPort(s.Addr().String())
		return s, port
	}
	run := func(t *testing.T, s *Server, cases []tc) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := httptest.NewRequest(c.method, c.path, nil)
				r.Host = c.host
				r.Header.Set("Authorization", "Bearer t")
				if c.origin != "" {
					r.Header.Set("Origin", c.origin)
				}
				before := reloads.Load()
				rec := httptest.NewRecorder()
				s.Handler().ServeHTTP(rec, r)
				if rec.Code != c.status {
					t.Errorf("%s %s Host %q Origin %q: %d, want %d (%s)", c.method, c.path, c.host, c.origin, rec.Code, c.status, rec.Body)
				}
				if rec.Code == 403 && reloads.Load() != before {
					t.Error("refused, but the reload ran")
				}
			})
		}
	}

	t.Run("loopback", func(t *testing.T) {
		s, port := start(t, "127.0.0.1:0")
		run(t, s, []tc{
			// The attack of the report, verbatim.
			{"rebinding attack", "POST", "/reload", "attacker.example", "http://attacker.example", 403},
			{"foreign host with our port", "POST", "/reload", "attacker.example:" + port, "", 403},
			{"foreign origin", "POST", "/reload", "127.0.0.1:" + port, "http://attacker.example", 403},
			{"foreign origin with our port", "POST", "/reload", "127.0.0.1:" + port, "http://attacker.example:" + port, 403},
			{"foreign https origin", "POST", "/reload", "127.0.0.1:" + port, "https://attacker.example", 403},
			{"foreign origin GET config", "GET", "/config", "127.0.0.1:" + port, "http://attacker.example", 403},
			{"foreign host GET config", "GET", "/config", "attacker.example:" + port, "", 403},
			{"foreign origin GET healthz", "GET", "/healthz", "127.0.0.1:" + port, "http://attacker.example", 403},
			{"null origin", "POST", "/reload", "127.0.0.1:" + port, "null", 403},
			{"origin of another local port", "POST", "/reload", "127.0.0.1:" + port, "http://localhost:1", 403},
			{"lookalike origin", "POST", "/reload", "127.0.0.1:" + port, "http://localhost.attacker.example:" + port, 403},
			{"host of another port", "POST", "/reload", "127.0.0.1:1", "", 403},
			{"host without port", "POST", "/reload", "127.0.0.1", "", 403},
			{"other IP", "POST", "/reload", "10.0.0.1:" + port, "", 403},
			{"bound address", "POST", "/reload", "127.0.0.1:" + port, "", 200},
			{"localhost", "POST", "/reload", "localhost:" + port, "", 200},
			{"LOCALHOST.", "POST", "/reload", "LOCALHOST.:" + port, "", 200},
			{"ipv6 loopback", "POST", "/reload", "[::1]:" + port, "", 200},
			{"other loopback IP", "GET", "/config", "127.0.0.2:" + port, "", 200},
			{"own origin", "POST", "/reload", "127.0.0.1:" + port, "http://127.0.0.1:" + port, 200},
			{"localhost origin", "GET", "/config", "localhost:" + port, "http://localhost:" + port, 200},
			{"ipv6 origin", "GET", "/config", "[::1]:" + port, "http://[::1]:" + port, 200},
			{"healthz", "GET", "/healthz", "localhost:" + port, "", 200},
		})
	})
	t.Run("all interfaces", func(t *testing.T) {
		s, port := start(t, "0.0.0.0:0")
		run(t, s, []tc{
			{"rebinding attack", "POST", "/reload", "attacker.example", "http://attacker.example", 403},
			{"foreign name with our port", "POST", "/reload", "attacker.example:" + port, "", 403},
			{"foreign origin", "GET", "/config", "192.0.2.7:" + port, "http://attacker.example:" + port, 403},
			{"an address of ours", "POST", "/reload", "192.0.2.7:" + port, "", 200},
			{"ipv6 address", "GET", "/config", "[2001:db8::7]:" + port, "http://[2001:db8::7]:" + port, 200},
			{"localhost", "POST", "/reload", "localhost:" + port, "", 200},
		})
	})
	t.Run("named", func(t *testing.T) {
		s, port := start(t, "localhost:0")
		run(t, s, []tc{
			{"rebinding attack", "POST", "/reload", "attacker.example", "http://attacker.example", 403},
			{"localhost", "POST", "/reload", "localhost:" + port, "http://localhost:" + port, 200},
		})
	})
}

// TestRebindingOverTCP sends the reported attack to a listening admin
// API: refused, and the reload does not run.
func TestRebindingOverTCP(t *testing.T) {
	var reloads atomic.Int32
	s, err := New(Options{Listen: "127.0.0.1:0", Reload: func() error { reloads.Add(1); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	post := func(host, origin string) int {
		req, _ := http.NewRequest("POST", "http://"+s.Addr().String()+"/reload", nil)
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post("attacker.example", "http://attacker.example"); got != 403 || reloads.Load() != 0 {
		t.Errorf("attack: %d, %d reloads; want 403 and none", got, reloads.Load())
	}
	if got := post("", ""); got != 200 || reloads.Load() != 1 {
		t.Errorf("local client: %d, %d reloads; want 200 and one", got, reloads.Load())
	}
}

// TestUnixSocket: "unix/PATH" serves the API on a unix socket whose mode
// is set before anyone can connect (0600 by default), never in the
// place of a file that is not a socket nor of a socket that answers;
// one left by a server that stopped is replaced.
func TestUnixSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "admin.sock")
	var reloads atomic.Int32
	start := func(mode os.FileMode) (*Server, error) {
		s, err := New(Options{Listen: "unix/" + path, SocketMode: mode, Reload: func() error { reloads.Add(1); return nil }})
		if err != nil {
			t.Fatal(err)
		}
		return s, s.Start()
	}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}, Timeout: 5 * time.Second}
	post := func() int {
		resp, err := client.Post("http://localhost/reload", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	s, err := start(0)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v %v, want a socket of mode 0600", fi.Mode(), err)
	}
	if got := s.Addr().String(); got != path {
		t.Errorf("Addr %q, want %q", got, path)
	}
	if got := post(); got != 200 || reloads.Load() != 1 {
		t.Errorf("reload over the socket: %d, %d reloads", got, reloads.Load())
	}
	if _, err := start(0); err == nil {
		t.Error("a second server took a socket that answers")
	}
	s.Close()
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want the socket alone", len(entries))
	}

	// A server that stopped left its socket: the next one replaces it.
	s, err = start(0o660)
	if err != nil {
		t.Fatalf("over a stale socket: %v", err)
	}
	if fi, _ := os.Lstat(path); fi.Mode().Perm() != 0o660 {
		t.Errorf("mode %v, want 0660", fi.Mode().Perm())
	}
	if got := post(); got != 200 {
		t.Errorf("reload over the new socket: %d", got)
	}
	s.Close()

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := start(0); err == nil {
		t.Error("a server replaced a file that is not a socket")
	}
	if b, _ := os.ReadFile(path); string(b) != "keep" {
		t.Errorf("the file holds %q", b)
	}
}

// TestUnixSocketInherited: a socket handed over by the process this one
// replaced keeps its path as its name, and closing it leaves the file
// for whoever serves it next.
func TestUnixSocketInherited(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin.sock")
	first, err := listenUnix(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f, err := first.(renamed).File()
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	ln, err := net.FileListener(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Listen: "unix/" + path, Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if got := s.Addr().String(); got != path {
		t.Errorf("Addr %q, want %q", got, path)
	}
	s.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("the socket is gone after Close: %v", err)
	}
}

// TestReadyzUnready: what the server lacks (a required store) turns
// /readyz to 503 with its name; /healthz stays 200.
func TestReadyzUnready(t *testing.T) {
	why := "store not answering"
	s, err := New(Options{Unready: func() string { return why }})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	for _, tt := range []struct {
		why, path string
		status    int
	}{
		{"store not answering", "/readyz", 503},
		{"store not answering", "/healthz", 200},
		{"", "/readyz", 200},
	} {
		why = tt.why
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "http://127.0.0.1:2019"+tt.path, nil))
		if w.Code != tt.status || tt.status == 503 && !strings.Contains(w.Body.String(), tt.why) {
			t.Errorf("%s with %q: %d %q, want %d", tt.path, tt.why, w.Code, w.Body.String(), tt.status)
		}
	}
}
