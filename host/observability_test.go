package host

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/observe"
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

// accessLogLines starts src (LOG replaced by a log file, PORT by a free
// port), runs do against the site's base URL, shuts the instance down
// (which flushes the log) and returns the log's lines.
func accessLogLines(t *testing.T, src string, do func(base string)) []string {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	logPath := filepath.Join(dir, "access.log")
	src = strings.NewReplacer("LOG", logPath, "PORT", fmt.Sprint(port), "ROOT", dir).Replace(src)
	inst, _ := startSource(t, src, InstanceOptions{})
	do(fmt.Sprintf("http://127.0.0.1:%d", port))
	if err := inst.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestAccessLogBytesAndTraceID: bytes is what the client received (a
// HEAD 404 logged the page's 72, a 429 logged 0 for its 18 bytes), and a
// CLF line carries the request's W3C trace id with tracing off (it showed
// trace_id=-). Both fail without the fixes.
func TestAccessLogBytesAndTraceID(t *testing.T) {
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(404)
		w.Write([]byte(strings.Repeat("x", 72))) // net/http sends Content-Length: 72, for HEAD too
	}))
	defer be.Close()
	got := map[string]int{} // path: body bytes the client received
	lines := accessLogLines(t, `
telemetry {
  access_log {
    format = "clf"
    output = "LOG"
  }
}
site "a.test" {
  listen = ["127.0.0.1:PORT"]
  route "/files/" {
    static { root = "ROOT" }
  }
  route "/limited" {
    respond { body = "ok" }
    rate_limit {
      rate  = "1/h"
      burst = 1
    }
  }
  route "/api/" {
    proxy {
      upstream "`+be.URL+`" {}
    }
  }
}
`, func(base string) {
		c := &http.Client{Timeout: 5 * time.Second}
		for _, r := range []struct{ method, path, traceparent string }{
			{"HEAD", "/api/missing", ""},
			{"GET", "/api/missing", ""},
			{"HEAD", "/files/missing", ""},
			{"GET", "/files/missing", ""},
			{"GET", "/limited", ""},
			{"GET", "/limited", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		} {
			req, _ := http.NewRequest(r.method, base+r.path, nil)
			if r.traceparent != "" {
				req.Header.Set("Traceparent", r.traceparent)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got[r.method+" "+r.path+" "+fmt.Sprint(resp.StatusCode)] = len(b)
		}
	})
	if len(lines) != 6 {
		t.Fatalf("%d lines, want 6:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for i, want := range []string{"HEAD /api/missing 404", "GET /api/missing 404", "HEAD /files/missing 404", "GET /files/missing 404", "GET /limited 200", "GET /limited 429"} {
		n, ok := got[want]
		if !ok {
			t.Fatalf("no response %q: %v", want, got)
		}
		method, rest, _ := strings.Cut(want, " ")
		path, status, _ := strings.Cut(rest, " ")
		bytes := "-"
		if n > 0 {
			bytes = fmt.Sprint(n)
		}
		if w := fmt.Sprintf(`"%s %s HTTP/1.1" %s %s "`, method, path, status, bytes); !strings.Contains(lines[i], w) {
			t.Errorf("line %d: %s\nwant %s (the client got %d bytes)", i, lines[i], w, n)
		}
	}
	if n := got["GET /limited 429"]; n != 18 {
		t.Errorf("the 429 sent %d bytes, want 18", n)
	}
	if !strings.Contains(lines[5], " trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=-") {
		t.Errorf("CLF line without tracing lost the request's trace id: %s", lines[5])
	}
}

// TestAccessLogRequestIDUpstream: with request_id among the fields, a
// proxied request carries a new X-Request-Id upstream (the client's
// replaced: 127.0.0.1 is no trusted proxy here), and the line logs it.
func TestAccessLogRequestIDUpstream(t *testing.T) {
	seen := make(chan string, 1)
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Get("X-Request-Id")
	}))
	defer be.Close()
	lines := accessLogLines(t, `
telemetry {
  access_log {
    output = "LOG"
    fields = ["status", "request_id"]
  }
}
site "a.test" {
  listen = ["127.0.0.1:PORT"]
  route "/" {
    proxy {
      upstream "`+be.URL+`" {}
    }
  }
}
`, func(base string) {
		req, _ := http.NewRequest("GET", base+"/x", nil)
		req.Header.Set("X-Request-Id", "forged")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	})
	var id string
	select {
	case id = <-seen:
	default:
		t.Fatal("the upstream saw no request")
	}
	if len(id) != 32 || id == "forged" {
		t.Errorf("upstream X-Request-Id %q, want a new 32-digit id", id)
	}
	if want := `{"status":200,"request_id":"` + id + `"}`; len(lines) != 1 || lines[0] != want {
		t.Errorf("log %q, want %q", lines, want)
	}
}

// TestAccessLogFieldSets: config checks a config's access log fields
// against its own copy of observe's set; the two must be the same.
func TestAccessLogFieldSets(t *testing.T) {
	if got, want := config.AccessLogFields, observe.FieldNames(); !slices.Equal(got, want) {
		t.Errorf("config.AccessLogFields = %q,\nobserve.FieldNames() = %q", got, want)
	}
}

// TestEarlyAnswersLoggedAndCounted: answers no route gave (the front
// door's 400 for a request without Host, its 505 for HTTP/1.2, 503 and
// the like) and https_redirect's redirects are logged and counted like
// other requests, with an empty route.
func TestEarlyAnswersLoggedAndCounted(t *testing.T) {
	dir := t.TempDir()
	cert, key := tlstest.NewCA(t, tlstest.Kinds[0]).Server(t, "a.test").Write(t, dir, "a-")
	logPath := filepath.Join(dir, "access.log")
	tlsPort, plain, aport := freePort(t), freePort(t), freePort(t)
	inst, _ := startSource(t, fmt.Sprintf(`
admin {
  listen = "127.0.0.1:%d"
}
telemetry {
  access_log {
    output = %q
    fields = ["method", "uri", "status", "bytes", "site", "route"]
  }
}
site "a.test" {
  listen         = ["127.0.0.1:%d"]
  https_redirect = ["127.0.0.1:%d"]
  tls {
    cert = %q
    key  = %q
  }
  route "/" {
    respond { body = "ok" }
  }
}
`, aport, logPath, tlsPort, plain, cert, key), InstanceOptions{})
	raw := func(req string) string {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", plain), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, req)
		b, _ := io.ReadAll(c)
		return string(b)
	}
	var sent []int // body bytes of each answer
	for _, c := range []struct{ req, status string }{
		{"GET /x HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n", "308"},
		{"GET /%zz HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n", "400"}, // the router's bad path
		{"GET /y HTTP/1.2\r\nHost: a.test\r\nConnection: close\r\n\r\n", "505"},   // the front door's
	} {
		got := raw(c.req)
		if !strings.HasPrefix(got, "HTTP/1.1 "+c.status) {
			t.Fatalf("%q: got %q, want %s", c.req, got, c.status)
		}
		_, body, _ := strings.Cut(got, "\r\n\r\n")
		sent = append(sent, len(body))
	}
	admin := "http://" + inst.AdminAddr()
	for _, status := range []string{"308", "400", "505"} {
		found := false
		for _, l := range metricLines(t, admin, "http_server_request_duration_seconds_count") {
			found = found || strings.Contains(l, `http_response_status_code="`+status+`"`) && strings.Contains(l, `http_route=""`)
		}
		if !found {
			t.Errorf("no request count for %s with an empty route:\n%s", status,
				strings.Join(metricLines(t, admin, "http_server_request_duration_seconds_count"), "\n"))
		}
	}
	if err := inst.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"method":"GET","uri":"/x","status":308,"bytes":%d,"site":"a.test","route":""}
{"method":"GET","uri":"/%%zz","status":400,"bytes":%d,"site":"","route":""}
{"method":"GET","uri":"/y","status":505,"bytes":%d,"site":"","route":""}
`, sent[0], sent[1], sent[2])
	if string(b) != want {
		t.Errorf("access log:\n%s\nwant\n%s", b, want)
	}
}

// TestAccessLogUpstreamFields: the proxy reports each try to the access
// log (proxy.TryObserver), so upstream_addr and upstream_status name the
// upstream that answered.
func TestAccessLogUpstreamFields(t *testing.T) {
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	}))
	defer be.Close()
	lines := accessLogLines(t, `
telemetry {
  access_log {
    output = "LOG"
    fields = ["status", "upstream_addr", "upstream_status"]
  }
}
site "a.test" {
  listen = ["127.0.0.1:PORT"]
  route "/" {
    proxy {
      upstream "`+be.URL+`" {}
    }
  }
}
`, func(base string) {
		resp, err := http.Get(base + "/x")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	})
	addr := strings.TrimPrefix(be.URL, "http://")
	if want := `{"status":202,"upstream_addr":"` + addr + `","upstream_status":202}`; len(lines) != 1 || lines[0] != want {
		t.Errorf("log %q, want %q", lines, want)
	}
}
