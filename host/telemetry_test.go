package host

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// telemetryConfig serves "body N" on /, with an admin listener and an
// access log. PORT, ADMIN, BODY and LOG are replaced.
const telemetryConfig = `
admin {
  listen = "127.0.0.1:ADMIN"
}
telemetry {
  access_log {
    format = "json"
    output = "LOG"
  }
}
site "t.test" {
  listen = ["127.0.0.1:PORT"]
  route "/" {
    respond {
      status = 200
      body   = "BODY"
    }
  }
  route "/api/" {
    respond {
      status = 201
      body   = "api"
    }
  }
}
`

type telInstance struct {
	inst  *Instance
	url   string
	admin string
	path  string
	log   string
	port  int
	aport int
}

func (ti *telInstance) render(body string) string {
	r := strings.NewReplacer("PORT", strconv.Itoa(ti.port), "ADMIN", strconv.Itoa(ti.aport), "BODY", body, "LOG", ti.log)
	return r.Replace(telemetryConfig)
}

func (ti *telInstance) write(t *testing.T, src string) {
	t.Helper()
	if err := os.WriteFile(ti.path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

func startTelemetry(t *testing.T, o InstanceOptions) *telInstance {
	t.Helper()
	dir := t.TempDir()
	ti := &telInstance{path: filepath.Join(dir, "sluice.hcl"), log: filepath.Join(dir, "access.log"),
		port: freePort(t), aport: freePort(t)}
	ti.write(t, ti.render("body 0"))
	o.Path = ti.path
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	inst, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = inst.Shutdown(ctx)
	})
	ti.inst = inst
	ti.url = fmt.Sprintf("http://127.0.0.1:%d", ti.port)
	ti.admin = "http://" + inst.AdminAddr()
	if inst.AdminAddr() != fmt.Sprintf("127.0.0.1:%d", ti.aport) {
		t.Fatalf("admin address %q", inst.AdminAddr())
	}
	return ti
}

func tget(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metricValue returns the value of the first sample line of /metrics
// that starts with prefix.
func metricValue(t *testing.T, admin, prefix string) float64 {
	t.Helper()
	_, body := tget(t, http.DefaultClient, admin+"/metrics")
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, prefix) {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			return v
		}
	}
	t.Fatalf("no %s in /metrics", prefix)
	return 0
}

// TestReloadHammer_ZeroFailedRequests reloads 50 times (each reload
// changes the body) while 8 keep-alive clients send requests: every
// request must get a 200 with one of the bodies.
func TestReloadHammer_ZeroFailedRequests(t *testing.T) {
	ti := startTelemetry(t, InstanceOptions{})
	const reloads, clients = 50, 8
	var (
		stop            atomic.Bool
		ok, failed      atomic.Int64
		wg              sync.WaitGroup
		mu              sync.Mutex
		failures        []string
		bodyOK          = regexp.MustCompile(`^body \d+$`)
		maxFailuresKept = 10
	)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := &http.Transport{MaxIdleConnsPerHost: 1}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			for !stop.Load() {
				resp, err := c.Get(ti.url + "/")
				var msg string
				if err == nil {
					b, rerr := io.ReadAll(resp.Body)
					resp.Body.Close()
					switch {
					case rerr != nil:
						msg = rerr.Error()
					case resp.StatusCode != 200 || !bodyOK.Match(b):
						msg = fmt.Sprintf("%d %q", resp.StatusCode, b)
					}
				} else {
					msg = err.Error()
				}
				if msg == "" {
					ok.Add(1)
					continue
				}
				failed.Add(1)
				mu.Lock()
				if len(failures) < maxFailuresKept {
					failures = append(failures, msg)
				}
				mu.Unlock()
			}
		}()
	}
	for i := 1; i <= reloads; i++ {
		ti.write(t, ti.render("body "+strconv.Itoa(i)))
		if err := ti.inst.Reload(); err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("reload %d: %v", i, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d of %d requests failed during %d reloads; first: %v", failed.Load(), failed.Load()+ok.Load(), reloads, failures)
	}
	if ok.Load() < clients {
		t.Fatalf("only %d requests", ok.Load())
	}
	if _, body := tget(t, http.DefaultClient, ti.url+"/"); body != "body 50" {
		t.Errorf("after the reloads: %q, want the last body", body)
	}
	if v := metricValue(t, ti.admin, `sluice_config_reloads_total{result="success"}`); v != reloads {
		t.Errorf("reloads success = %v, want %d", v, reloads)
	}
	if v := metricValue(t, ti.admin, `sluice_config_reloads_total{result="failure"}`); v != 0 {
		t.Errorf("reloads failure = %v, want 0", v)
	}
	// Requests were counted under the configured site and route, across
	// the generations.
	n := metricValue(t, ti.admin, `http_server_request_duration_seconds_count{http_request_method="GET",http_response_status_code="200",http_route="/",route="/",server_address="t.test"}`)
	if int64(n) < ok.Load() {
		t.Errorf("duration count %v < %d requests served", n, ok.Load())
	}
	t.Logf("%d requests, 0 failed, %d reloads", ok.Load(), reloads)
}

// TestReloadHammer_InvalidChangesNothing: a broken config file is
// refused with diagnostics; the running config keeps answering the same
// and the failure is counted.
func TestReloadHammer_InvalidChangesNothing(t *testing.T) {
	ti := startTelemetry(t, InstanceOptions{})
	c := &http.Client{Timeout: 5 * time.Second}
	before := map[string]string{}
	for _, p := range []string{"/", "/api/x", "/nope/"} {
		code, body := tget(t, c, ti.url+p)
		before[p] = fmt.Sprint(code, " ", body)
	}
	ti.write(t, ti.render("body 1")+"\nsite \"broken\" {\n  route \"/\" {\n    nonsense = 1\n  }\n")
	err := ti.inst.Reload()
	var d *DiagnosticsError
	if !errors.As(err, &d) {
		t.Fatalf("Reload = %v (%T), want *DiagnosticsError", err, err)
	}
	// The same through the admin API: 400 and the diagnostics.
	resp, err := http.Post(ti.admin+"/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "sluice.hcl:") {
		t.Errorf("POST /reload: %d %q, want 400 with file:line diagnostics", resp.StatusCode, b)
	}
	for p, want := range before {
		code, body := tget(t, c, ti.url+p)
		if got := fmt.Sprint(code, " ", body); got != want {
			t.Errorf("%s after a refused reload: %q, want %q", p, got, want)
		}
	}
	if v := metricValue(t, ti.admin, `sluice_config_reloads_total{result="failure"}`); v != 2 {
		t.Errorf("reloads failure = %v, want 2", v)
	}
	if v := metricValue(t, ti.admin, `sluice_config_reloads_total{result="success"}`); v != 0 {
		t.Errorf("reloads success = %v, want 0", v)
	}
	// A good file again reloads through the admin API.
	ti.write(t, ti.render("body 2"))
	resp, err = http.Post(ti.admin+"/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "reloaded\n" {
		t.Errorf("POST /reload: %d %q", resp.StatusCode, b)
	}
	if _, body := tget(t, c, ti.url+"/"); body != "body 2" {
		t.Errorf("after admin reload: %q", body)
	}
}

// TestShutdownFlipsReadinessThenDrains: Shutdown turns /readyz to 503
// at once, keeps serving through the delay, then stops listening.
func TestShutdownFlipsReadinessThenDrains(t *testing.T) {
	const delay = 400 * time.Millisecond
	ti := startTelemetry(t, InstanceOptions{ShutdownDelay: delay})
	c := &http.Client{Timeout: 5 * time.Second}
	if code, _ := tget(t, c, ti.admin+"/readyz"); code != 200 {
		t.Fatalf("readyz before shutdown: %d", code)
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- ti.inst.Shutdown(context.Background()) }()
	deadline := time.Now().Add(delay / 2)
	for {
		code, _ := tget(t, c, ti.admin+"/readyz")
		if code == 503 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz still %d during the shutdown delay", code)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code, body := tget(t, c, ti.url+"/"); code != 200 || body != "body 0" {
		t.Errorf("during the delay: %d %q, want still served", code, body)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < delay {
		t.Errorf("Shutdown returned after %v, before the %v delay", took, delay)
	}
	if _, err := http.Get(ti.url + "/"); err == nil {
		t.Error("still serving after Shutdown")
	}
	if _, err := http.Get(ti.admin + "/healthz"); err == nil {
		t.Error("admin still serving after Shutdown")
	}
}

// TestTelemetryWiring: the config's access log, traces and admin
// endpoints reach their outputs.
func TestTelemetryWiring(t *testing.T) {
	var posts atomic.Int64
	var gotPath atomic.Value
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath.Store(r.URL.Path + " " + r.Header.Get("X-Api-Key"))
		posts.Add(1)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	dir := t.TempDir()
	logPath := filepath.Join(dir, "access.log")
	port, aport := freePort(t), freePort(t)
	src := fmt.Sprintf(`
admin {
  listen = "127.0.0.1:%d"
  token  = "tok"
}
telemetry {
  service_name = "sluice-test"
  traces {
    endpoint     = "%s"
    sample_ratio = 1
    headers      = { "X-Api-Key" = "k1" }
  }
  access_log {
    format = "clf"
    output = "%s"
  }
}
site "w.test" {
  listen = ["127.0.0.1:%d"]
  route "/" {
    respond { body = "hi" }
  }
}
`, aport, collector.URL, logPath, port)
	path := filepath.Join(dir, "sluice.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	inst, err := Start(InstanceOptions{Path: path, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	admin := "http://" + inst.AdminAddr()
	c := &http.Client{Timeout: 5 * time.Second}
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/x?y=1", port), nil)
	req.Host = "unknown.example" // falls to the default site: labelled w.test
	req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	areq, _ := http.NewRequest("GET", admin+"/config", nil)
	areq.Header.Set("Authorization", "Bearer tok")
	resp, err = c.Do(areq)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	json.NewDecoder(resp.Body).Decode(&cfg)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Contains(fmt.Sprint(cfg), "tok ") || strings.Contains(fmt.Sprint(cfg), "k1") {
		t.Errorf("/config: %d %v: want 200, secrets redacted", resp.StatusCode, cfg)
	}
	if code, _ := tget(t, c, admin+"/metrics"); code != 401 {
		t.Errorf("/metrics without the token: %d", code)
	}
	areq, _ = http.NewRequest("GET", admin+"/metrics", nil)
	areq.Header.Set("Authorization", "Bearer tok")
	resp, err = c.Do(areq)
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(mb), `server_address="w.test"`) || strings.Contains(string(mb), "unknown.example") {
		t.Errorf("metrics should label the default site, not the raw Host:\n%s", grepLines(string(mb), "http_server_request_duration_seconds_count"))
	}

	if err := inst.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if posts.Load() == 0 {
		t.Fatal("no OTLP export reached the collector")
	}
	if p, _ := gotPath.Load().(string); p != "/v1/traces k1" {
		t.Errorf("export went to %q, want /v1/traces with the configured header", p)
	}
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) != 1 || !strings.Contains(lines[0], `"GET /x?y=1 HTTP/1.1" 200 2`) ||
		!strings.Contains(lines[0], "trace_id=4bf92f3577b34da6a3ce929d0e0e4736") || !strings.Contains(lines[0], `site="w.test"`) {
		t.Errorf("access log:\n%s", strings.Join(lines, "\n"))
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestAdminUnixSocketConfig: `listen = "unix/PATH"` with a socket_mode
// serves the admin API on a socket of that mode, and nothing on TCP.
func TestAdminUnixSocketConfig(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "admin.sock")
	src := fmt.Sprintf(`
admin {
  listen      = "unix/%s"
  socket_mode = "0640"
}
site "u.test" {
  listen = ["127.0.0.1:%d"]
  route "/" {
    respond { body = "hi" }
  }
}
`, sock, freePort(t))
	path := filepath.Join(dir, "sluice.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	inst, err := Start(InstanceOptions{Path: path, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Shutdown(context.Background())
	if fi, err := os.Lstat(sock); err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o640 {
		t.Fatalf("admin socket: %v %v, want a socket of mode 0640", fi, err)
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	if code, _ := tget(t, c, "http://localhost/healthz"); code != 200 {
		t.Errorf("/healthz over the socket: %d", code)
	}
	if got := inst.AdminAddr(); got != sock {
		t.Errorf("AdminAddr %q, want %q", got, sock)
	}
}

// TestBuildEverywhere: the version and commit SetBuild records show in
// sluice_build_info, in /config's "build" and in the start-up log line.
func TestBuildEverywhere(t *testing.T) {
	SetBuild("v9.9.9", "abc123def")
	defer SetBuild("", "")
	dir := t.TempDir()
	aport := freePort(t)
	src := fmt.Sprintf(`
admin {
  listen = "127.0.0.1:%d"
}
site "v.test" {
  listen = ["127.0.0.1:%d"]
  route "/" {
    respond { body = "hi" }
  }
}
`, aport, freePort(t))
	path := filepath.Join(dir, "sluice.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	var mu sync.Mutex
	inst, err := Start(InstanceOptions{Path: path, Log: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Shutdown(context.Background())
	c := &http.Client{Timeout: 5 * time.Second}
	admin := fmt.Sprintf("http://127.0.0.1:%d", aport)
	_, metrics := tget(t, c, admin+"/metrics")
	want := fmt.Sprintf(`sluice_build_info{commit="abc123def",goversion=%q,version="v9.9.9"} 1`, goruntime.Version())
	if !strings.Contains(metrics, want) {
		t.Errorf("/metrics lacks %s:\n%s", want, grepLines(metrics, "sluice_build_info"))
	}
	_, body := tget(t, c, admin+"/config")
	var cfg struct {
		Build Build `json:"build"`
		Sites []any `json:"sites"`
	}
	if err := json.Unmarshal([]byte(body), &cfg); err != nil {
		t.Fatalf("/config: %v\n%s", err, body)
	}
	if cfg.Build.Version != "v9.9.9" || cfg.Build.Commit != "abc123def" || cfg.Build.GoVersion != goruntime.Version() || len(cfg.Sites) != 1 {
		t.Errorf("/config build %+v, %d sites", cfg.Build, len(cfg.Sites))
	}
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if !strings.Contains(out, `msg="starting sluice" version=v9.9.9 commit=abc123def go=`+goruntime.Version()) {
		t.Errorf("no start-up line with the build:\n%s", out)
	}
}
