package admin

import (
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/admin/status"
)

func newStatusServer(t *testing.T, token string) *Server {
	t.Helper()
	s, err := New(Options{Listen: "127.0.0.1:0", Token: token, Status: func() *status.Status {
		return &status.Status{
			Build: status.Build{Version: "v1", Commit: "abc", GoVersion: "go1.26"},
			Upstreams: []status.Upstream{{Site: "a.test", Route: "/api/", Address: "http://127.0.0.1:9000", Healthy: true,
				Requests: 3, Samples: []status.Point{{At: 1, PerSecond: 2}}}},
			Filters: []status.Filter{{Name: "auth", Digest: "sha256:ab", PoolSize: 4}},
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStatusEndpoints: the page and its files, /status and /upstreams,
// with their content types; the page forbids inline code and framing.
func TestStatusEndpoints(t *testing.T) {
	h := newStatusServer(t, "").Handler()
	for _, c := range []struct {
		path, ctype, body string
	}{
		{"/", "text/html", `<script src="/ui/status.js"`},
		{"/ui/status.js", "text/javascript", `fetch(location.origin + "/status"`},
		{"/ui/status.css", "text/css", "svg.spark"},
		{"/status", "application/json", `"address": "http://127.0.0.1:9000"`},
		{"/upstreams", "application/json", `"num_requests": 3`},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, newRequest("GET", c.path))
		if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), c.ctype) || !strings.Contains(rec.Body.String(), c.body) {
			t.Errorf("%s: %d %q, want %s containing %q:\n%.300s", c.path, rec.Code, rec.Header().Get("Content-Type"), c.ctype, c.body, rec.Body)
		}
		if strings.HasPrefix(c.ctype, "text/") {
			if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
				t.Errorf("%s: Content-Security-Policy %q", c.path, csp)
			}
		}
	}
	var ups []map[string]any
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, newRequest("GET", "/upstreams"))
	if err := json.Unmarshal(rec.Body.Bytes(), &ups); err != nil || len(ups) != 1 {
		t.Fatalf("/upstreams: %v %s", err, rec.Body)
	}
	for _, k := range []string{"site", "route", "address", "healthy", "down", "ejected", "in_flight", "num_requests", "fails", "recent", "samples"} {
		if _, ok := ups[0][k]; !ok {
			t.Errorf("/upstreams: no %q in %s", k, rec.Body)
		}
	}
	for _, path := range []string{"/ui/nope.js", "/ui/", "/nope"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, newRequest("GET", path))
		if rec.Code != 404 {
			t.Errorf("%s: %d, want 404", path, rec.Code)
		}
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, newRequest("POST", "/status"))
	if rec.Code != 405 {
		t.Errorf("POST /status: %d, want 405", rec.Code)
	}
}

// TestStatusDisabled: without a Status func the page and the status
// endpoints are 404, as before they existed.
func TestStatusDisabled(t *testing.T) {
	s, err := New(Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/ui/status.js", "/status", "/upstreams"} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, newRequest("GET", path))
		if rec.Code != 404 {
			t.Errorf("%s: %d, want 404", path, rec.Code)
		}
	}
}

// TestStatusBehindChecks: a foreign Host or Origin is refused for the
// page, its files and the status endpoints; with a token, they need it,
// as a bearer token or as the password of Basic credentials (what a
// browser sends), and the page's 401 asks the browser for them.
func TestStatusBehindChecks(t *testing.T) {
	h := newStatusServer(t, "s3cret").Handler()
	basic := func(user, pass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	for _, path := range []string{"/", "/ui/status.js", "/ui/status.css", "/status", "/upstreams"} {
		for _, c := range []struct {
			name, host, origin, auth string
			want                     int
		}{
			{"no token", "", "", "", 401},
			{"bearer", "", "", "Bearer s3cret", 200},
			{"basic", "", "", basic("admin", "s3cret"), 200},
			{"basic, no user", "", "", basic("", "s3cret"), 200},
			{"basic, wrong password", "", "", basic("s3cret", "nope"), 401},
			{"foreign host", "evil.example", "", "Bearer s3cret", 403},
			{"rebinding host with port", "evil.example:2019", "", "Bearer s3cret", 403},
			{"foreign origin", "", "http://evil.example", "Bearer s3cret", 403},
			{"own origin", "", "http://127.0.0.1:2019", "Bearer s3cret", 200},
		} {
			req := newRequest("GET", path)
			if c.host != "" {
				req.Host = c.host
			}
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != c.want {
				t.Errorf("%s, %s: %d, want %d", path, c.name, rec.Code, c.want)
			}
			if rec.Code == 401 {
				ch := strings.Join(rec.Header().Values("WWW-Authenticate"), ", ")
				page := path == "/" || strings.HasPrefix(path, "/ui/")
				if strings.Contains(ch, "Basic") != page || !strings.Contains(ch, "Bearer") {
					t.Errorf("%s, %s: WWW-Authenticate %q", path, c.name, ch)
				}
			}
		}
	}
}

// TestStatusPageSize: the page stays light enough to keep open all day.
func TestStatusPageSize(t *testing.T) {
	total := 0
	for _, name := range []string{"index.html", "status.css", "status.js"} {
		rec := httptest.NewRecorder()
		path := "/ui/" + name
		if name == "index.html" {
			path = "/"
		}
		newStatusServer(t, "").Handler().ServeHTTP(rec, newRequest("GET", path))
		total += rec.Body.Len()
	}
	if total == 0 || total > 32<<10 {
		t.Errorf("the page is %d bytes, want at most 32 KiB", total)
	}
}
