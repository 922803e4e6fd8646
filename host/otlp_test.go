package host

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an in-process OTLP/HTTP collector: it decodes the
// protobuf requests for metrics and logs and keeps what they named.
type otlpReceiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	metrics map[string]bool   // metric names
	logs    map[string]string // log body -> its "file" attribute
	service []string          // service.name of every export
	keys    []string          // x-api-key of every export
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{metrics: map[string]bool{}, logs: map[string]string{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(io.LimitReader(req.Body, 8<<20))
		if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "bad request", 400)
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.keys = append(r.keys, req.Header.Get("X-Api-Key"))
		switch req.URL.Path {
		case "/v1/metrics":
			var m colmetrics.ExportMetricsServiceRequest
			if err := proto.Unmarshal(body, &m); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			for _, rm := range m.ResourceMetrics {
				r.service = append(r.service, attr(rm.GetResource().GetAttributes(), "service.name"))
				for _, sm := range rm.ScopeMetrics {
					for _, mt := range sm.Metrics {
						r.metrics[mt.Name] = true
					}
				}
			}
			b, _ := proto.Marshal(&colmetrics.ExportMetricsServiceResponse{})
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.Write(b)
		case "/v1/logs":
			var l collogs.ExportLogsServiceRequest
			if err := proto.Unmarshal(body, &l); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			for _, rl := range l.ResourceLogs {
				r.service = append(r.service, attr(rl.GetResource().GetAttributes(), "service.name"))
				for _, sl := range rl.ScopeLogs {
					for _, rec := range sl.LogRecords {
						r.logs[rec.GetBody().GetStringValue()] = attr(rec.Attributes, "file")
					}
				}
			}
			b, _ := proto.Marshal(&collogs.ExportLogsServiceResponse{})
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.Write(b)
		default:
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func attr(kvs []*common.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

// TestTelemetryOTLPMetricsAndLogs: with telemetry's metrics endpoint and
// logs block, the metrics /metrics has and sluice's own log records
// (with their attributes, at the level asked for and above) reach an
// OTLP/HTTP collector, with the configured headers and service name;
// without an admin block too.
func TestTelemetryOTLPMetricsAndLogs(t *testing.T) {
	rcv := newOTLPReceiver(t)
	srv := startConfig(t, `
telemetry {
  service_name = "edge-test"
  metrics {
    endpoint = "`+rcv.srv.URL+`"
    headers  = { "x-api-key" = "k1" }
    interval = "50ms"
  }
  logs {
    endpoint = "`+rcv.srv.URL+`"
    headers  = { "x-api-key" = "k1" }
    level    = "info"
  }
}

site "a.test" {
  listen = ["127.0.0.1:PORT"]
  route "/" {
    respond { body = "ok" }
  }
}
`)
	req, _ := http.NewRequest("GET", srv.URL+"/", nil)
	req.Host = "a.test"
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := srv.Inst.Reload(); err != nil { // logs "reloaded" with file=PATH
		t.Fatal(err)
	}
	srv.Inst.
		tel.log.Debug("below the level")
	// Shutdown flushes both providers: what was logged and the last
	// metrics are exported before it returns.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Inst.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for _, name := range []string{"http_server_request_duration_seconds", "sluice_build_info", "sluice_config_reloads_total"} {
		if !rcv.metrics[name] {
			names := make([]string, 0, len(rcv.metrics))
			for n := range rcv.metrics {
				names = append(names, n)
			}
			slices.Sort(names)
			t.Errorf("metric %s not exported; got %v", name, names)
		}
	}
	if got, ok := rcv.logs["reloaded"]; !ok || got != srv.Config {
		t.Errorf("log record \"reloaded\": present %v, file=%q, want %q (records %v)", ok, got, srv.Config, rcv.logs)
	}
	if _, ok := rcv.logs["below the level"]; ok {
		t.Error("a debug record was exported at level info")
	}
	if len(rcv.keys) == 0 {
		t.Fatal("nothing exported")
	}
	for i, k := range rcv.keys {
		if k != "k1" {
			t.Errorf("export %d: x-api-key %q, want k1", i, k)
		}
	}
	for i, s := range rcv.service {
		if s != "edge-test" {
			t.Errorf("export %d: service.name %q, want edge-test", i, s)
		}
	}
}
