package host

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/generation"
)

// testServer is an instance started by startConfig, as net/http's
// clientServerTest is a test's server and its client.
type testServer struct {
	Inst   *Instance // the running instance
	URL    string    // http://127.0.0.1:PORT, the listener PORT names
	Config string    // the config file's path (rewrite it, then reload)
}

// startConfig writes src to a config file in a temp dir (with every PORT
// replaced by one free port, and public/index.html beside it) and starts
// an instance on it, shut down when the test ends.
func startConfig(t testing.TB, src string) testServer {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "public")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "index.html"), []byte("<h1>home</h1>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	src = strings.ReplaceAll(src, "PORT", fmt.Sprint(port))
	path := filepath.Join(dir, "sluice.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	inst, err := Start(InstanceOptions{Path: path, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = inst.Shutdown(ctx)
	})
	return testServer{Inst: inst, URL: fmt.Sprintf("http://127.0.0.1:%d", port), Config: path}
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

const sitesConfig = `
site "a.test" {
  aliases = ["www.a.test"]
  listen  = ["127.0.0.1:PORT"]
  route "/" {
    static { root = "./public" }
  }
  route "/hello" {
    respond {
      status = 200
      body   = "hello from a"
    }
  }
}
site "b.test" {
  listen = ["127.0.0.1:PORT"]
  default = true
  route "/" {
    respond {
      status = 203
      body   = "b"
    }
  }
}
`

func get(t *testing.T, url, host string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestSitesAndRoutes(t *testing.T) {
	base := startConfig(t, sitesConfig).URL
	cases := []struct {
		host, path string
		status     int
		body       string
	}{
		{"a.test", "/", 200, "<h1>home</h1>\n"},
		{"WWW.A.TEST:1234", "/hello", 200, "hello from a"},
		{"a.test", "/hello/x", 200, "hello from a"},
		{"a.test", "/hellox", 404, ""},
		{"b.test", "/anything", 203, "b"},
		{"unknown.test", "/", 203, "b"},
	}
	for _, c := range cases {
		status, body := get(t, base+c.path, c.host)
		if status != c.status || (c.body != "" && body != c.body) {
			t.Errorf("%s%s: %d %q, want %d %q", c.host, c.path, status, body, c.status, c.body)
		}
	}
}

// raw sends a raw request and returns the status line.
func raw(t *testing.T, addr, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line)
}

func TestHardening(t *testing.T) {
	base := startConfig(t, `
listener "127.0.0.1:PORT" {
  max_header_bytes = "4KiB"
  max_request_body = "1KiB"
}
site "a.test" {
  listen = ["127.0.0.1:PORT"]
  route "/" {
    respond { body = "ok" }
  }
}
`).URL
	addr := strings.TrimPrefix(base, "http://")
	cases := []struct {
		name, req, want string
	}{
		{"plain", "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n", "HTTP/1.1 200 OK"},
		{"header too large", "GET / HTTP/1.1\r\nHost: a.test\r\nX-Big: " + strings.Repeat("a", 5000) + "\r\n\r\n", "HTTP/1.1 431 Request Header Fields Too Large"},
		{"CL and TE", "POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "HTTP/1.1 400 Bad Request"},
		{"TE and CL", "POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\ncontent-length: 3\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "HTTP/1.1 400 Bad Request"},
		{"duplicate CL", "POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", "HTTP/1.1 400 Bad Request"},
		{"same CL twice", "POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", "HTTP/1.1 400 Bad Request"},
		{"bad TE", "POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", "HTTP/1.1 400 Bad Request"},
		{"no host", "GET / HTTP/1.1\r\n\r\n", "HTTP/1.1 400 Bad Request"},
		{"two hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "HTTP/1.1 400 Bad Request"},
		{"body too large", "POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 4096\r\n\r\n" + strings.Repeat("x", 4096), "HTTP/1.1 413 Request Entity Too Large"},
		{"chunked ok", "POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "HTTP/1.1 200 OK"},
	}
	for _, c := range cases {
		if got := raw(t, addr, c.req); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestSlowClientTimedOut(t *testing.T) {
	base := startConfig(t, `
listener "127.0.0.1:PORT" {
  read_timeout = "300ms"
  idle_timeout = "300ms"
}
site "a.test" {
  listen = ["127.0.0.1:PORT"]
  route "/" {
    respond { body = "ok" }
  }
}
`).URL
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A slowloris client: half a request line, then nothing.
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	_, err = io.ReadAll(c)
	if err != nil {
		t.Fatalf("connection not closed by the server: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("slow client held the connection for %v", d)
	}
}

func TestReloadKeepsServingOnBadConfig(t *testing.T) {
	srv := startConfig(t, sitesConfig)
	if err := os.WriteFile(srv.Config, []byte(`site "a.test" { listen = ["127.0.0.1:1"] route "/" { bogus {} } }`), 0o644); err != nil {
		t.Fatal(err)
	}
	err := srv.Inst.Reload()
	if _, ok := err.(*DiagnosticsError); !ok {
		t.Fatalf("reload of a bad config: %v, want *DiagnosticsError", err)
	}
	if !strings.Contains(err.Error(), "sluice.hcl:1:") {
		t.Errorf("diagnostics lack FILE:LINE: %s", err)
	}
	if status, body := get(t, srv.URL+"/hello", "a.test"); status != 200 || body != "hello from a" {
		t.Fatalf("after a refused reload: %d %q", status, body)
	}
	// A good reload changes behaviour.
	good := strings.ReplaceAll(sitesConfig, "hello from a", "hello again")
	good = strings.ReplaceAll(good, "PORT", strings.TrimPrefix(srv.URL, "http://127.0.0.1:"))
	if err := os.WriteFile(srv.Config, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := srv.Inst.Reload(); err != nil {
		t.Fatal(err)
	}
	if status, body := get(t, srv.URL+"/hello", "a.test"); status != 200 || body != "hello again" {
		t.Fatalf("after a reload: %d %q", status, body)
	}
}

func TestDefaultConfigServesDirectory(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "index.html"), []byte("idx"), 0o644)
	port := freePort(t)
	inst, err := Start(InstanceOptions{Config: config.Default(dir, fmt.Sprintf("127.0.0.1:%d", port), false),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Shutdown(context.Background())
	if status, body := get(t, fmt.Sprintf("http://127.0.0.1:%d/", port), "anything"); status != 200 || body != "idx" {
		t.Fatalf("%d %q", status, body)
	}
}

// TestGatewayLimits: allow/deny answers 403; a rate limit keyed by the
// consumer an auth filter set limits each consumer on its own.
func TestGatewayLimits(t *testing.T) {
	base := startConfig(t, `
site "a.test" {
  listen = ["127.0.0.1:PORT"]
  route "/" {
    respond { body = "ok" }
    rate_limit {
      rate  = "60/m"
      burst = 5
      key   = "consumer"
    }
  }
  route "/admin" {
    respond { body = "admin" }
    deny = ["127.0.0.0/8"]
  }
}
`).URL
	status := func(path, consumer string) int {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("X-Consumer", consumer)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 429 && resp.Header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
		return resp.StatusCode
	}
	var limited int
	for range 8 {
		if status("/", "bob") == 429 {
			limited++
		}
	}
	if limited != 3 {
		t.Errorf("bob: %d of 8 requests limited, want 3 (burst 5)", limited)
	}
	if s := status("/", "alice"); s != 200 {
		t.Errorf("alice limited with bob's budget: %d", s)
	}
	if s := status("/admin", "alice"); s != 403 {
		t.Errorf("denied client: %d, want 403", s)
	}
}

// TestLiteralHostHeader: host_header may be a literal name (CONFIG.md);
// the upstream receives it as Host, unless header_up sets Host itself.
func TestLiteralHostHeader(t *testing.T) {
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Host) }))
	defer be.Close()
	base := startConfig(t, `
site "*" {
  listen = ["127.0.0.1:PORT"]
  route "/" {
    proxy {
      upstreams   = ["`+be.URL+`"]
      host_header = "v2.backend.internal"
    }
  }
  route "/set" {
    proxy {
      upstreams   = ["`+be.URL+`"]
      host_header = "v2.backend.internal"
      header_up { set = { host = "from-header-up" } }
    }
  }
}
`).URL
	for path, want := range map[string]string{"/": "v2.backend.internal", "/set": "from-header-up"} {
		if status, body := get(t, base+path, "client.test"); status != 200 || body != want {
			t.Errorf("%s: %d %q, want 200 %q", path, status, body, want)
		}
	}
}

// TestServeRefusesUnusableFileWithPosition: a proxy `ca` that is not PEM
// fails serve (and reload) as a config diagnostic at the attribute, not a
// bare build error.
func TestServeRefusesUnusableFileWithPosition(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sluice.hcl")
	os.WriteFile(filepath.Join(dir, "ca.txt"), []byte("not PEM\n"), 0o644)
	os.WriteFile(path, []byte(`site "*" {
  listen = ["127.0.0.1:1"]
  route "/" {
    proxy {
      upstreams = ["https://127.0.0.1:9443"]
      tls { ca = "ca.txt" }
    }
  }
}
`), 0o644)
	inst, err := Start(InstanceOptions{Path: path, Log: slog.New(slog.DiscardHandler)})
	if err == nil {
		inst.Shutdown(context.Background())
		t.Fatal("started with a ca that is not PEM")
	}
	var de *DiagnosticsError
	if !errors.As(err, &de) || len(de.Diags) != 1 || de.Diags[0].Subject.Start.Line != 6 || de.Diags[0].Subject.Start.Column != 18 {
		t.Fatalf("want one diagnostic at 6:18, got %v", err)
	}
}

// TestFirstApplyFails: the first generation is in place before its
// listeners open (no early client is answered 503), and taken out again
// when one cannot open; a later Apply starts the generation it swaps in.
func TestFirstApplyFails(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	s := NewServer(slog.New(slog.DiscardHandler))
	var started atomic.Int32
	free := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	g := &generation.Generation{Listeners: []*config.Listener{{Address: free}, {Address: taken.Addr().String()}},
		Grace: time.Second, Starters: []func(){func() { started.Add(1) }}}
	if err := s.Apply(g); err == nil {
		t.Fatal("Apply succeeded on an address in use")
	}
	if s.Current() != nil {
		t.Error("a generation that failed to apply is current")
	}
	g2 := &generation.Generation{Listeners: []*config.Listener{{Address: free}}, Grace: time.Second,
		Starters: []func(){func() { started.Add(1) }}}
	if err := s.Apply(g2); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		s.Shutdown(ctx)
	}()
	if s.Current() != g2 || started.Load() != 2 {
		t.Errorf("current %p (want %p), %d starts (want 2)", s.Current(), g2, started.Load())
	}
}
