//go:build conformance

package status

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/conformance/internal/gotool"
)

// missing skips the test for a tool that is not there, or fails it
// under SLUICE_CONFORMANCE_STRICT=1.
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("SLUICE_CONFORMANCE_STRICT") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func chromium(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("SLUICE_CHROMIUM")
	if bin == "" {
		bin = "/usr/bin/chromium"
	}
	if _, err := os.Stat(bin); err != nil {
		missing(t, "no headless browser at %s (apt-get install -y chromium, or set SLUICE_CHROMIUM): %v", bin, err)
	}
	return bin
}

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// syncBuffer is the server's output, bounded to its last 64 KiB.
type syncBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	if len(s.b) > 64<<10 {
		s.b = append(s.b[:0], s.b[len(s.b)-64<<10:]...)
	}
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}

const config = `
admin {
  listen = "127.0.0.1:%d"
  token  = "%s"
}
filter "headers" {
  module = %q
  config = { response = { set = { "X-Frame-Options" = "DENY" } } }
  pool {
    size = 2
  }
}
site "shop.test" {
  listen = ["127.0.0.1:%d"]
  route "/api/" {
    filters = ["headers"]
    proxy {
      upstreams = [%q]
    }
  }
  route "/legacy/" {
    proxy {
      upstreams = [%q, %q]
      passive_health {
        max_fails    = 1
        fail_timeout = "5m"
      }
    }
  }
  route "/" {
    respond {
      body = "shop\n"
    }
  }
}
`

// token guards the admin API; the browser sends it as the password of
// the URL's credentials, as an operator's browser does after its prompt.
const token = "conformance-token"

// get is GET url with the admin token.
func get(c *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return c.Do(req)
}

// TestStatusPageInChromium: the status page, loaded by headless Chromium
// from a running sluice behind an admin token, shows after its script
// ran the proxied route, its upstream as healthy, the ejected one with
// its reason, and the filter with its pool; a screenshot of it is kept.
func TestStatusPageInChromium(t *testing.T) {
	browser := chromium(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "sluice")
	if err := gotool.Sluice(bin); err != nil {
		t.Fatal(err)
	}
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Millisecond) // a latency to show
		io.WriteString(w, "ok\n")
	}))
	defer be.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // nothing listens there now: a refused upstream

	wasm, err := filepath.Abs("../../filters/headers/headers.wasm")
	if err != nil {
		t.Fatal(err)
	}
	ports := freePorts(t, 2)
	adminPort, sitePort := ports[0], ports[1]
	cfg := filepath.Join(dir, "sluice.hcl")
	src := fmt.Sprintf(config, adminPort, token, wasm, sitePort, be.URL, deadURL, be.URL)
	if err := os.WriteFile(cfg, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := new(syncBuffer)
	cmd := exec.Command(bin, "serve", "-c", cfg)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("sluice output:\n%s", out)
		}
	}()
	admin := fmt.Sprintf("http://127.0.0.1:%d", adminPort)
	site := fmt.Sprintf("http://127.0.0.1:%d", sitePort)
	c := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := c.Get(admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("sluice not ready within 30s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Traffic while the page is open, bounded in time and count: the
	// sparklines have something to draw.
	stop := make(chan struct{})
	var sent atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 5000; i++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(5+i%4*5) * time.Millisecond):
			}
			path := "/api/items"
			if i%10 == 0 {
				path = "/legacy/x"
			}
			if resp, err := c.Get(site + path); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				sent.Add(1)
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	// Samples are taken when the API is asked, at most one a second, in
	// real time; the browser's virtual time runs faster, so a few are
	// taken here first.
	for range 4 {
		time.Sleep(time.Second)
		resp, err := get(c, admin+"/status")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if resp, err := c.Get(admin + "/"); err != nil || resp.StatusCode != 401 {
		t.Fatalf("the page without the token: %v %v, want 401", resp, err)
	} else {
		resp.Body.Close()
	}
	page := fmt.Sprintf("http://admin:%s@127.0.0.1:%d/", token, adminPort)

	// --virtual-time-budget lets the page's script run its polls before
	// the DOM is dumped or the screenshot taken.
	run := func(args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--disable-dev-shm-usage", "--hide-scrollbars", "--user-data-dir=" + t.TempDir(),
			"--virtual-time-budget=3000"}
		cmd := exec.CommandContext(ctx, browser, append(base, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\n%s", browser, strings.Join(args, " "), err, tail(stderr.String(), 3000))
		}
		return stdout.Bytes()
	}
	dom := string(run("--dump-dom", page))
	for _, want := range []struct{ what, re string }{
		{"the script ran", `<body[^>]*data-loaded="true"`},
		{"the route", `data-route="/api/"`},
		{"the healthy upstream", `data-upstream="` + regexp.QuoteMeta(be.URL) + `" data-state="healthy"`},
		{"the ejected upstream", `data-upstream="` + regexp.QuoteMeta(deadURL) + `" data-state="ejected"`},
		{"its reason", `passive_health: max_fails = 1 reached`},
		{"the filter and its pool", `data-filter="headers" data-pool-size="2"`},
		{"the pool in words", `pool 2 · \d+ live`},
		{"a sparkline", `<svg class="spark"[^>]*>.*?<polyline points="`},
		{"the build", `id="build"[^>]*>[^<]+ · `},
	} {
		if !regexp.MustCompile(want.re).MatchString(dom) {
			t.Errorf("the page does not show %s (%s)", want.what, want.re)
		}
	}
	if t.Failed() {
		t.Logf("DOM after the script ran:\n%s", tail(dom, 6000))
	}

	shotDir := os.Getenv("SLUICE_ARTIFACTS")
	if shotDir == "" {
		shotDir = os.TempDir()
	}
	if err := os.MkdirAll(shotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(shotDir, "sluice-status.png")
	os.Remove(shot)
	run("--screenshot="+shot, "--window-size=1280,1000", page)
	fi, err := os.Stat(shot)
	if err != nil || fi.Size() < 10<<10 {
		t.Fatalf("no screenshot at %s: %v", shot, err)
	}
	fmt.Printf("status page screenshot: %s\n", shot)
	t.Logf("status page screenshot: %s (%d bytes; %d requests sent meanwhile)", shot, fi.Size(), sent.Load())

	// The JSON the page drew, for the record.
	var st struct {
		Upstreams []struct {
			Address string `json:"address"`
			Healthy bool   `json:"healthy"`
		} `json:"upstreams"`
	}
	resp, err := get(c, admin+"/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || len(st.Upstreams) != 3 {
		t.Errorf("/status: %v, %d upstreams", err, len(st.Upstreams))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
