package observe

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
)

func gather(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// series returns the metric of family name whose labels include want, or
// nil.
func series(t *testing.T, m *Metrics, name string, want map[string]string) *dto.Metric {
	t.Helper()
	f := gather(t, m)[name]
	if f == nil {
		return nil
	}
next:
	for _, mt := range f.Metric {
		got := map[string]string{}
		for _, lp := range mt.Label {
			got[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		return mt
	}
	return nil
}

func histCount(t *testing.T, m *Metrics, name string, want map[string]string) uint64 {
	t.Helper()
	s := series(t, m, name, want)
	if s == nil {
		return 0
	}
	return s.GetHistogram().GetSampleCount()
}

func TestWrapMetricsOverEngines(t *testing.T) {
	m := NewMetrics()
	o := &Observer{Metrics: m}
	h := o.Wrap("example.com", "/api/", exchange.HandlerFunc(func(x exchange.Exchange) error {
		switch string(x.Path()) {
		case "/api/created":
			x.SetStatus(201)
			x.SetBody([]byte("12345"))
		case "/api/fail":
			return exchange.Errorf(418, "teapot")
		case "/api/boom":
			return errors.New("boom")
		default:
			x.SetBody([]byte("ok"))
		}
		return nil
	}))
	engines := exchangetest.Engines(t, h)
	for _, e := range engines {
		for _, c := range []struct{ method, path string }{
			{"GET", "/api/x"}, {"POST", "/api/created"}, {"GET", "/api/fail"},
			{"GET", "/api/boom"}, {"FOO", "/api/x"},
		} {
			req, _ := http.NewRequest(c.method, e.URL+c.path, strings.NewReader("body"))
			resp, err := e.Client.Do(req)
			if err != nil {
				t.Fatalf("%s %s %s: %v", e.Name, c.method, c.path, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	n := uint64(len(engines))
	base := map[string]string{"server_address": "example.com", "http_route": "/api/"}
	for _, c := range []struct {
		method, status string
		want           uint64
	}{
		{"GET", "200", n},
		{"POST", "201", n},
		{"GET", "418", n},
		{"GET", "500", n},
		{"_OTHER", "200", n},
	} {
		want := map[string]string{"http_request_method": c.method, "http_response_status_code": c.status}
		for k, v := range base {
			want[k] = v
		}
		got := histCount(t, m, "http_server_request_duration_seconds", want)
		if got != c.want {
			t.Errorf("duration count %s %s = %d, want %d", c.method, c.status, got, c.want)
		}
	}
	resp := series(t, m, "http_server_response_body_size_bytes", map[string]string{"http_request_method": "POST", "http_response_status_code": "201"})
	if resp == nil || resp.GetHistogram().GetSampleSum() != float64(5*n) {
		t.Errorf("response size POST 201 = %v, want sum %d", resp, 5*n)
	}
	req := series(t, m, "http_server_request_body_size_bytes", map[string]string{"http_request_method": "POST"})
	if req == nil || req.GetHistogram().GetSampleSum() != float64(4*n) {
		t.Errorf("request size POST = %v, want sum %d", req, 4*n)
	}
	for _, s := range gather(t, m)["http_server_active_requests"].GetMetric() {
		if v := s.GetGauge().GetValue(); v != 0 {
			t.Errorf("active requests %v = %v after all finished", s.Label, v)
		}
	}
	// Labels come from config and fixed sets only.
	for _, f := range []string{"http_server_request_duration_seconds", "http_server_active_requests"} {
		for _, s := range gather(t, m)[f].GetMetric() {
			for _, lp := range s.Label {
				if strings.Contains(lp.GetValue(), "/api/x") || strings.Contains(lp.GetValue(), "127.0.0.1") || lp.GetValue() == "FOO" {
					t.Errorf("%s has a request-derived label %s=%q", f, lp.GetName(), lp.GetValue())
				}
			}
		}
	}
}

func TestWrapResponseSizeFromContentLength(t *testing.T) {
	m := NewMetrics()
	h := (&Observer{Metrics: m}).Wrap("s", "/", exchange.HandlerFunc(func(x exchange.Exchange) error {
		x.SetResponseHeader("Content-Length", "4096")
		return nil
	}))
	x := newFake("GET", "/f")
	if err := h.ServeExchange(x); err != nil {
		t.Fatal(err)
	}
	s := series(t, m, "http_server_response_body_size_bytes", map[string]string{"http_route": "/"})
	if s.GetHistogram().GetSampleSum() != 4096 {
		t.Errorf("response size = %v, want 4096", s.GetHistogram().GetSampleSum())
	}
}

func TestWrapNothingConfigured(t *testing.T) {
	next := exchange.HandlerFunc(func(exchange.Exchange) error { return nil })
	if h := (&Observer{}).Wrap("s", "/", next); h == nil {
		t.Fatal("nil handler")
	} else if _, ok := h.(*wrapped); ok {
		t.Error("Wrap with nothing configured should return next itself")
	}
}

func TestMethodIndex(t *testing.T) {
	for _, c := range []struct {
		in, want string
	}{{"GET", "GET"}, {"PATCH", "PATCH"}, {"get", "_OTHER"}, {"PROPFIND", "_OTHER"}, {"", "_OTHER"}} {
		if got := methodNames[methodIndex([]byte(c.in))]; got != c.want {
			t.Errorf("methodIndex(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestFilterInvocations(t *testing.T) {
	m := NewMetrics()
	var obs FilterObserver = m
	obs.Invocation("auth", "request", "ok", 50*time.Microsecond)
	obs.Invocation("auth", "request", "ok", 70*time.Microsecond)
	obs.Invocation("auth", "request", "trap", time.Millisecond)
	obs.Invocation("auth", "response", "timeout", 10*time.Millisecond)
	calls := series(t, m, "sluice_filter_invocations_total", map[string]string{"filter": "auth", "phase": "request", "outcome": "ok"})
	if calls.GetCounter().GetValue() != 2 {
		t.Errorf("invocations ok = %v, want 2", calls.GetCounter().GetValue())
	}
	if s := series(t, m, "sluice_filter_errors_total", map[string]string{"outcome": "ok"}); s != nil {
		t.Errorf("ok counted as an error: %v", s)
	}
	for _, oc := range []string{"trap", "timeout"} {
		if s := series(t, m, "sluice_filter_errors_total", map[string]string{"filter": "auth", "outcome": oc}); s.GetCounter().GetValue() != 1 {
			t.Errorf("errors %s = %v, want 1", oc, s)
		}
	}
	if got := histCount(t, m, "sluice_filter_duration_seconds", map[string]string{"filter": "auth", "outcome": "ok"}); got != 2 {
		t.Errorf("duration count = %d, want 2", got)
	}
	if a := testing.AllocsPerRun(100, func() { m.Invocation("auth", "request", "ok", time.Microsecond) }); a != 0 {
		t.Errorf("Invocation allocates %v times per call, want 0", a)
	}
}

func TestFilterSeriesCapped(t *testing.T) {
	m := NewMetrics()
	for i := range maxFilterSeries + 10 {
		m.Invocation("f"+itoa(i), "request", "ok", time.Microsecond)
	}
	f := gather(t, m)["sluice_filter_invocations_total"]
	if n := len(f.GetMetric()); n > maxFilterSeries+1 {
		t.Errorf("%d series, want at most %d", n, maxFilterSeries+1)
	}
	if s := series(t, m, "sluice_filter_invocations_total", map[string]string{"filter": "_other"}); s.GetCounter().GetValue() != 10 {
		t.Errorf("_other = %v, want 10", s)
	}
}

func itoa(i int) string { return statusLabel(i) }

func TestUpstreamHandles(t *testing.T) {
	m := NewMetrics()
	a := m.Upstream("/api/", "http://127.0.0.1:9001")
	b := m.Upstream("/api/", "http://127.0.0.1:9001") // the next generation's
	a.Request(200, time.Millisecond)
	a.Request(502, time.Millisecond)
	b.Request(0, time.Second)
	lbl := map[string]string{"upstream": "http://127.0.0.1:9001", "route": "/api/"}
	for code, want := range map[string]float64{"200": 1, "502": 1, "none": 1} {
		l := map[string]string{"http_response_status_code": code}
		for k, v := range lbl {
			l[k] = v
		}
		if s := series(t, m, "sluice_upstream_requests_total", l); s.GetCounter().GetValue() != want {
			t.Errorf("requests %s = %v, want %v", code, s, want)
		}
	}
	if got := histCount(t, m, "sluice_upstream_request_duration_seconds", lbl); got != 3 {
		t.Errorf("duration count = %d, want 3", got)
	}
	if s := series(t, m, "sluice_upstream_healthy", lbl); s.GetGauge().GetValue() != 1 {
		t.Errorf("healthy = %v, want 1", s)
	}
	b.SetHealthy(false)
	if s := series(t, m, "sluice_upstream_healthy", lbl); s.GetGauge().GetValue() != 0 {
		t.Errorf("healthy = %v, want 0", s)
	}
	a.Close()
	a.Close() // twice is harmless
	if s := series(t, m, "sluice_upstream_healthy", lbl); s == nil {
		t.Error("health series gone while a handle is open")
	}
	b.Close()
	if s := series(t, m, "sluice_upstream_healthy", lbl); s != nil {
		t.Error("health series kept after the last handle closed")
	}
	var nilU *Upstream
	nilU.Request(200, 0) // a proxy without metrics
	nilU.SetHealthy(true)
	nilU.Close()
}

func TestReloadsAndCertificates(t *testing.T) {
	m := NewMetrics()
	if s := series(t, m, "sluice_config_reloads_total", map[string]string{"result": "failure"}); s == nil || s.GetCounter().GetValue() != 0 {
		t.Errorf("failure series should exist at 0: %v", s)
	}
	first := series(t, m, "sluice_config_last_reload_success_timestamp_seconds", nil).GetGauge().GetValue()
	if first < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("last reload = %v, want about now", first)
	}
	m.Reloaded(nil)
	m.Reloaded(errors.New("bad"))
	m.Reloaded(errors.New("bad"))
	for res, want := range map[string]float64{"success": 1, "failure": 2} {
		if s := series(t, m, "sluice_config_reloads_total", map[string]string{"result": res}); s.GetCounter().GetValue() != want {
			t.Errorf("reloads %s = %v, want %v", res, s, want)
		}
	}
	exp := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	m.SetCertificateExpiry("example.com", "www.example.com", exp)
	if s := series(t, m, "sluice_tls_certificate_expiry_timestamp_seconds", map[string]string{"site": "example.com", "name": "www.example.com"}); s.GetGauge().GetValue() != float64(exp.Unix()) {
		t.Errorf("expiry = %v", s)
	}
	m.ResetCertificates()
	if s := series(t, m, "sluice_tls_certificate_expiry_timestamp_seconds", nil); s != nil {
		t.Errorf("expiry kept after reset: %v", s)
	}
}

// populated returns metrics with every sluice family holding a series,
// and exemplars on the duration histogram.
func populated(t *testing.T) *Metrics {
	m := NewMetrics()
	tr, _ := newTestTracing(t, 1)
	h := (&Observer{Metrics: m, Tracing: tr}).Wrap("example.com", "/", exchange.HandlerFunc(func(x exchange.Exchange) error {
		x.SetBody([]byte("hello"))
		return nil
	}))
	for range 3 {
		if err := h.ServeExchange(newFake("GET", "/x")); err != nil {
			t.Fatal(err)
		}
	}
	m.Invocation("auth", "request", "ok", time.Microsecond)
	m.Invocation("auth", "request", "trap", time.Microsecond)
	m.Upstream("/api/", "http://127.0.0.1:9001").Request(200, time.Millisecond)
	m.Reloaded(nil)
	m.SetCertificateExpiry("example.com", "example.com", time.Now().Add(90*24*time.Hour))
	return m
}

func scrape(t *testing.T, m *Metrics, accept string) []byte {
	t.Helper()
	req := httptest.NewRequest("GET", "/metrics", nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

const openMetricsAccept = "application/openmetrics-text;version=1.0.0"

func TestExemplarsCarryTraceIDs(t *testing.T) {
	body := scrape(t, populated(t), openMetricsAccept)
	var found bool
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "http_server_request_duration_seconds_bucket") && strings.Contains(line, `# {`) {
			if !strings.Contains(line, `trace_id="`) || !strings.Contains(line, `span_id="`) {
				t.Errorf("exemplar without ids: %s", line)
			}
			found = true
		}
	}
	if !found {
		t.Errorf("no exemplar in OpenMetrics output:\n%s", body)
	}
}

func TestPromtoolCheckMetrics(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian: apt-get install prometheus); skipping the lint of our output")
	}
	// promtool reads the Prometheus text format (what a scrape without an
	// OpenMetrics Accept header gets); the exemplars are checked above.
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(scrape(t, populated(t), ""))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
