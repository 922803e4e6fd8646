//go:build conformance

package telemetry

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

type promResponse struct {
	Status string `json:"status"`
	Data   struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	} `json:"data"`
}

type promExemplars struct {
	Status string `json:"status"`
	Data   []struct {
		SeriesLabels map[string]string `json:"seriesLabels"`
		Exemplars    []struct {
			Labels map[string]string `json:"labels"`
		} `json:"exemplars"`
	} `json:"data"`
}

// TestPrometheusScrapesSluice: a real Prometheus scrapes the admin
// /metrics (with the bearer token, as OpenMetrics with exemplars) and
// its query API returns sluice's request series, labelled by configured
// site and route, with trace ids as exemplars.
func TestPrometheusScrapesSluice(t *testing.T) {
	prom := prometheusBinary(t)
	// Traces must be sampled for exemplars; a sink stands in for the
	// collector here (Jaeger has its own test).
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer sink.Close()

	port, admin, promPort := freePort(t), freePort(t), freePort(t)
	guest, _ := filepath.Abs("../../runtime/testdata/set_header.wasm")
	src := func(withFilter bool) string {
		filterBlock, filters := "", ""
		if withFilter {
			filterBlock = fmt.Sprintf("filter \"sethdr\" {\n  module = %q\n}\n", guest)
			filters = `filters = ["sethdr"]`
		}
		return fmt.Sprintf(`
admin {
  listen = "127.0.0.1:%d"
  token  = "conformance-token"
}
telemetry {
  traces {
    endpoint     = "%s"
    sample_ratio = 1
  }
}
site "prom.test" {
  listen = ["127.0.0.1:%d"]
  route "/" {
    respond { body = "hello" }
  }
  route "/api/" {
    %s
    respond {
      status = 201
      body   = "created"
    }
  }
}
%s
`, admin, sink.URL, port, filters, filterBlock)
	}
	withFilter := false
	if _, err := tryStart(t, src(true)); err == nil {
		withFilter = true
	} else {
		t.Logf("filters unavailable, not checking filter metrics: %v", err)
		startSluice(t, src(false))
	}

	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: sluice
    authorization:
      credentials: conformance-token
    static_configs:
      - targets: ["127.0.0.1:%d"]
`, admin)), 0o644); err != nil {
		t.Fatal(err)
	}
	startProcess(t, prom,
		"--config.file="+cfg,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:"+strconv.Itoa(promPort),
		"--enable-feature=exemplar-storage",
	)
	api := fmt.Sprintf("http://127.0.0.1:%d", promPort)
	waitHTTP(t, api+"/-/ready", 60*time.Second)

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	send(t, base+"/x", 20, nil)
	send(t, base+"/api/y", 5, map[string]string{"Host": "unknown.example"})

	query := func(q string) promResponse {
		t.Helper()
		var r promResponse
		if err := getJSON(api+"/api/v1/query?query="+url.QueryEscape(q), &r); err != nil {
			t.Fatalf("query %s: %v", q, err)
		}
		return r
	}
	// The scrape every second picks the counts up.
	want := map[string]float64{"/": 20, "/api/": 5}
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := query(`http_server_request_duration_seconds_count{job="sluice"}`)
		got := map[string]float64{}
		for _, s := range r.Data.Result {
			if s.Metric["server_address"] != "prom.test" {
				t.Errorf("series labelled server_address=%q, want the site name", s.Metric["server_address"])
			}
			v, _ := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
			got[s.Metric["http_route"]] += v
		}
		if got["/"] == want["/"] && got["/api/"] == want["/api/"] {
			for _, s := range r.Data.Result {
				if s.Metric["http_route"] == "/api/" && s.Metric["http_response_status_code"] != "201" {
					t.Errorf("/api/ series %v", s.Metric)
				}
				if s.Metric["http_request_method"] != "GET" {
					t.Errorf("method label %v", s.Metric)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus has %v, want %v (series: %+v)", got, want, r.Data.Result)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if r := query(`up{job="sluice"}`); len(r.Data.Result) != 1 || fmt.Sprint(r.Data.Result[0].Value[1]) != "1" {
		t.Errorf("up = %+v", r.Data.Result)
	}
	names := []string{"sluice_config_reloads_total", "sluice_config_last_reload_success_timestamp_seconds", "http_server_active_requests"}
	if withFilter {
		names = append(names, `sluice_filter_invocations_total{filter="sethdr",phase="request",outcome="ok"}`,
			`sluice_filter_duration_seconds_count{filter="sethdr"}`)
	}
	for _, name := range names {
		if r := query(name); len(r.Data.Result) == 0 {
			t.Errorf("no %s in Prometheus", name)
		}
	}

	var ex promExemplars
	now := time.Now()
	q := url.Values{"query": {`http_server_request_duration_seconds_bucket{job="sluice"}`},
		"start": {strconv.FormatInt(now.Add(-5*time.Minute).Unix(), 10)}, "end": {strconv.FormatInt(now.Add(time.Minute).Unix(), 10)}}
	if err := getJSON(api+"/api/v1/query_exemplars?"+q.Encode(), &ex); err != nil {
		t.Fatalf("query_exemplars: %v", err)
	}
	n := 0
	for _, s := range ex.Data {
		for _, e := range s.Exemplars {
			if len(e.Labels["trace_id"]) != 32 {
				t.Errorf("exemplar labels %v: want a trace_id", e.Labels)
			}
			n++
		}
	}
	if n == 0 {
		t.Errorf("Prometheus stored no exemplars: %+v", ex)
	}
}
