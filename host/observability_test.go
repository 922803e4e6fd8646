package host

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/tlsconf/tlstest"
)

// startSource writes src to a config file and starts an instance on it.
func startSource(t *testing.T, src string, o InstanceOptions) (*Instance, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sluice.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	o.Path = path
	o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	inst, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = inst.Shutdown(ctx)
	})
	return inst, path
}

// metricLines returns the /metrics sample lines that start with prefix.
func metricLines(t *testing.T, admin, prefix string) []string {
	t.Helper()
	_, body := tget(t, http.DefaultClient, admin+"/metrics")
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// TestProxyUpstreamMetrics: a proxy route's upstreams report their tries
// and health to the admin's /metrics.
func TestProxyUpstreamMetrics(t *testing.T) {
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/missing" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, "up")
	}))
	defer be.Close()
	port, aport := freePort(t), freePort(t)
	inst, _ := startSource(t, fmt.Sprintf(`
admin {
  listen = "127.0.0.1:%d"
}
site "t.test" {
  listen = ["127.0.0.1:%d"]
  route "/api/" {
    proxy {
      upstreams = [%q]
    }
  }
}
`, aport, port, be.URL), InstanceOptions{})
	admin := "http://" + inst.AdminAddr()
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	c := &http.Client{Timeout: 5 * time.Second}
	for i := 0; i < 3; i++ {
		if code, body := tget(t, c, url+"/api/x"); code != 200 || body != "up" {
			t.Fatalf("GET /api/x: %d %q", code, body)
		}
	}
	tget(t, c, url+"/api/missing")
	labels := fmt.Sprintf(`{http_response_status_code="%%d",route="/api/",upstream=%q}`, be.URL)
	if v := metricValue(t, admin, "sluice_upstream_requests_total"+fmt.Sprintf(labels, 200)); v != 3 {
		t.Errorf("200s counted %v, want 3", v)
	}
	if v := metricValue(t, admin, "sluice_upstream_requests_total"+fmt.Sprintf(labels, 404)); v != 1 {
		t.Errorf("404s counted %v, want 1", v)
	}
	if v := metricValue(t, admin, fmt.Sprintf(`sluice_upstream_healthy{route="/api/",upstream=%q}`, be.URL)); v != 1 {
		t.Errorf("healthy %v, want 1", v)
	}
}

// TestProxyTraceContextThroughHost: with tracing on, the upstream gets a
// traceparent in the client's trace whose parent is sluice's own span.
func TestProxyTraceContextThroughHost(t *testing.T) {
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(collector.Close) // after the instance's shutdown flushed
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Header.Get("Traceparent"))
	}))
	defer be.Close()
	port := freePort(t)
	startSource(t, fmt.Sprintf(`
telemetry {
  traces {
    endpoint = %q
  }
}
site "t.test" {
  listen = ["127.0.0.1:%d"]
  route "/" {
    proxy {
      upstreams = [%q]
    }
  }
}
`, collector.URL, port, be.URL), InstanceOptions{})
	const client = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/", port), nil)
	req.Header.Set("Traceparent", client)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got := strings.Split(string(b), "-")
	if len(got) != 4 || got[1] != "0af7651916cd43dd8448eb211c80319c" || got[2] == "b7ad6b7169203331" || got[3] != "01" {
		t.Errorf("upstream got traceparent %q, want the client's trace under a sluice span", b)
	}
}

// TestCertificateExpiryMetric: every TLS certificate's NotAfter is
// exported per site and name, and a reload replaces the set.
func TestCertificateExpiryMetric(t *testing.T) {
	ca := tlstest.NewCA(t, tlstest.ECDSA)
	dir := t.TempDir()
	expA := time.Now().Add(50 * 24 * time.Hour).Truncate(time.Second)
	expB := time.Now().Add(20 * 24 * time.Hour).Truncate(time.Second)
	ac, ak := ca.ServerUntil(t, expA, "a.test").Write(t, dir, "a-")
	bc, bk := ca.ServerUntil(t, expB, "www.b.test").Write(t, dir, "b-")
	addr, aport := tlsFreeAddr(t), freePort(t)
	site := func(name, cert, key string) string {
		return fmt.Sprintf(`
site %q {
  listen = [%q]
  tls {
    cert = %q
    key  = %q
  }
  route "/" {
    respond {
      body = "ok"
    }
  }
}
`, name, addr, cert, key)
	}
	head := fmt.Sprintf("admin {\n  listen = \"127.0.0.1:%d\"\n}\n", aport)
	inst, path := startSource(t, head+site("a.test", ac, ak)+site("b.test", bc, bk), InstanceOptions{})
	admin := "http://" + inst.AdminAddr()
	const name = "sluice_tls_certificate_expiry_timestamp_seconds"
	if v := metricValue(t, admin, name+`{name="a.test",site="a.test"}`); v != float64(expA.Unix()) {
		t.Errorf("a.test expiry %v, want %d", v, expA.Unix())
	}
	if v := metricValue(t, admin, name+`{name="www.b.test",site="b.test"}`); v != float64(expB.Unix()) {
		t.Errorf("b.test expiry %v, want %d", v, expB.Unix())
	}
	// The site is served with the certificate reported.
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), ServerName: "a.test"}}}
	if resp, err := c.Get("https://" + addr + "/"); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if got := resp.TLS.PeerCertificates[0].NotAfter; !got.Equal(expA) {
			t.Errorf("served certificate expires %v, reported %v", got, expA)
		}
	}
	// Reload without b.test: its series goes.
	if err := os.WriteFile(path, []byte(head+site("a.test", ac, ak)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := inst.Reload(); err != nil {
		t.Fatal(err)
	}
	if lines := metricLines(t, admin, name+"{"); len(lines) != 1 || !strings.Contains(lines[0], `site="a.test"`) {
		t.Errorf("after reload: %q, want a.test only", lines)
	}
}

// TestShutdownDelayFromConfig: server.shutdown_delay is Shutdown's delay
// when InstanceOptions.ShutdownDelay is zero.
func TestShutdownDelayFromConfig(t *testing.T) {
	const delay = 300 * time.Millisecond
	port, aport := freePort(t), freePort(t)
	inst, _ := startSource(t, fmt.Sprintf(`
admin {
  listen = "127.0.0.1:%d"
}
server {
  shutdown_delay = "300ms"
}
site "t.test" {
  listen = ["127.0.0.1:%d"]
  route "/" {
    respond {
      body = "ok"
    }
  }
}
`, aport, port), InstanceOptions{})
	admin := "http://" + inst.AdminAddr()
	c := &http.Client{Timeout: 5 * time.Second}
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- inst.Shutdown(context.Background()) }()
	if !withinHost(delay/2, func() bool { code, _ := tget(t, c, admin+"/readyz"); return code == 503 }) {
		t.Fatal("/readyz not 503 during the shutdown delay")
	}
	if code, body := tget(t, c, fmt.Sprintf("http://127.0.0.1:%d/", port)); code != 200 || body != "ok" {
		t.Errorf("during the delay: %d %q", code, body)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < delay {
		t.Errorf("Shutdown took %v, less than the configured %v", took, delay)
	}
}

func withinHost(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}
