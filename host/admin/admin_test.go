package admin

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
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
			h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
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
		s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != want {
			t.Errorf("%s: %d, want %d", path, rec.Code, want)
		}
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/reload", nil))
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
		req := httptest.NewRequest(method, c.path, nil)
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
