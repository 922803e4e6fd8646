package observe

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/sluicehq/sluice/host/exchange"
)

// dropExporter discards spans, so that benchmarks measure the request
// path and not a growing slice.
type dropExporter struct{}

func (dropExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (dropExporter) Shutdown(context.Context) error                             { return nil }

var okHandler = exchange.HandlerFunc(func(x exchange.Exchange) error {
	x.SetBody(benchBody)
	return nil
})

var benchBody = []byte("hello, world\n")

func benchWrap(b *testing.B, o *Observer) {
	h := o.Wrap("example.com", "/api/", okHandler)
	x := newFake("GET", "/api/items?id=7")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		x.reset()
		if err := h.ServeExchange(x); err != nil {
			b.Fatal(err)
		}
	}
}

func benchTracing(b *testing.B, ratio float64) *Tracing {
	tr, err := NewTracing(TracingOptions{SampleRatio: ratio, Exporter: dropExporter{}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tr.Shutdown(context.Background()) })
	return tr
}

// BenchmarkWrap_None is the handler alone: the baseline.
func BenchmarkWrap_None(b *testing.B) { benchWrap(b, &Observer{}) }

func BenchmarkWrap_Metrics(b *testing.B) { benchWrap(b, &Observer{Metrics: NewMetrics()}) }

func BenchmarkWrap_MetricsTracingUnsampled(b *testing.B) {
	benchWrap(b, &Observer{Metrics: NewMetrics(), Tracing: benchTracing(b, 0)})
}

func BenchmarkWrap_MetricsTracingSampled(b *testing.B) {
	benchWrap(b, &Observer{Metrics: NewMetrics(), Tracing: benchTracing(b, 1)})
}

func BenchmarkWrap_MetricsAccessLog(b *testing.B) {
	l, err := OpenAccessLog(AccessLogOptions{Writer: discard{}})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	benchWrap(b, &Observer{Metrics: NewMetrics(), AccessLog: l})
}

func BenchmarkWrap_Parallel_MetricsTracingUnsampled(b *testing.B) {
	h := (&Observer{Metrics: NewMetrics(), Tracing: benchTracing(b, 0)}).Wrap("example.com", "/api/", okHandler)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		x := newFake("GET", "/api/items?id=7")
		for pb.Next() {
			x.reset()
			_ = h.ServeExchange(x)
		}
	})
}

func benchAccessLog(b *testing.B, format string) {
	l, err := OpenAccessLog(AccessLogOptions{Format: format, Writer: discard{}})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	e := testEntry()
	b.ReportAllocs()
	for b.Loop() {
		l.Log(e)
	}
}

func BenchmarkAccessLog_JSON(b *testing.B) { benchAccessLog(b, "json") }
func BenchmarkAccessLog_CLF(b *testing.B)  { benchAccessLog(b, "clf") }

func BenchmarkFilterInvocation(b *testing.B) {
	m := NewMetrics()
	b.ReportAllocs()
	for b.Loop() {
		m.Invocation("auth", "request", "ok", 1000)
	}
}
