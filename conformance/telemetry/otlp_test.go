//go:build conformance

package telemetry

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// TestJaegerReceivesMetricsAndLogs: sluice's OTLP metrics (every series
// /metrics has) and its own log records reach a real OTLP receiver, the
// OpenTelemetry Collector's inside Jaeger v2, over HTTP and gRPC; its
// debug exporter writes what it received to Jaeger's output, where the
// test reads the metric names, the log bodies and the service name.
func TestJaegerReceivesMetricsAndLogs(t *testing.T) {
	otlpHTTP, otlpGRPC, _, output := startJaegerLog(t)
	for _, c := range []struct{ protocol, endpoint, service string }{
		{"http/protobuf", otlpHTTP, "sluice-otlp-http"},
		{"grpc", otlpGRPC, "sluice-otlp-grpc"},
	} {
		t.Run(c.protocol, func(t *testing.T) {
			port := freePort(t)
			inst := startSluice(t, fmt.Sprintf(`
telemetry {
  service_name = %q
  metrics {
    endpoint = %q
    protocol = %q
    interval = "200ms"
  }
  logs {
    endpoint = %q
    protocol = %q
  }
}
site "otlp.test" {
  listen = ["127.0.0.1:%d"]
  route "/" {
    respond { body = "ok" }
  }
}
`, c.service, c.endpoint, c.protocol, c.endpoint, c.protocol, port))
			send(t, fmt.Sprintf("http://127.0.0.1:%d/", port), 3, nil)
			if err := inst.Reload(); err != nil { // logs "reloaded"
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := inst.Shutdown(ctx); err != nil { // flushes both
				t.Fatal(err)
			}
			want := [][]byte{[]byte(c.service), []byte("http_server_request_duration_seconds"),
				[]byte("sluice_build_info"), []byte("reloaded")}
			deadline := time.Now().Add(30 * time.Second)
			for {
				b, _ := os.ReadFile(output)
				var lacking []string
				for _, w := range want {
					if !bytes.Contains(b, w) {
						lacking = append(lacking, string(w))
					}
				}
				if len(lacking) == 0 {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("Jaeger's debug exporter shows no %q", lacking)
				}
				time.Sleep(300 * time.Millisecond)
			}
		})
	}
}
