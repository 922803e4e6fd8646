package runtime_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/filtertest"
)

// discard is a span exporter that drops everything.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// benchChain runs b.N requests through the filters built from guests
// (request phases in order, response phases in reverse), with or without
// a sampled parent span. It reports ns per guest invocation.
func benchChain(b *testing.B, sampled bool, guests ...string) {
	benchChainOpts(b, sampled, nil, guests...)
}

func benchChainOpts(b *testing.B, sampled bool, opt func(*runtime.EngineOptions), guests ...string) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(discard{})))
	ev := newEnv(b, func(o *runtime.EngineOptions) {
		o.TracerProvider = tp
		o.Observer = nil
		if opt != nil {
			opt(o)
		}
	})
	var filters []*runtime.Filter
	for _, g := range guests {
		filters = append(filters, ev.filter(b, g, runtime.FilterOptions{PoolSize: 1}))
	}
	ctx := context.Background()
	if sampled {
		c, s := tp.Tracer("bench").Start(ctx, "server")
		defer s.End()
		ctx = c
	}
	x := filtertest.NewExchange("GET", "/", "accept", "*/*", "user-agent", "bench")
	x.Ctx = ctx
	calls := make([]runtime.Call, len(filters)) // by value, as the host's chain keeps them
	invocations := 0
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		x.Reset("/")
		x.Ctx = ctx
		n := 0
		for _, f := range filters {
			c, err := f.Request(x)
			if err != nil {
				b.Fatal(err)
			}
			invocations++
			if !c.Continues() {
				break
			}
			calls[n] = c
			n++
		}
		for i := n - 1; i >= 0; i-- {
			if err := calls[i].HandleResponse(x, false); err != nil {
				b.Fatal(err)
			}
			invocations++
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(invocations), "ns/invocation")
	// CPU time is what the machine spends (all threads, GC included); on a
	// loaded machine it is steadier than wall time.
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(invocations), "cpu-ns/invocation")
}

func BenchmarkFilter_Noop(b *testing.B) {
	b.Run("unsampled", func(b *testing.B) { benchChain(b, false, "noop") })
	b.Run("sampled", func(b *testing.B) { benchChain(b, true, "noop") })
}

func BenchmarkFilter_SetHeader(b *testing.B) {
	b.Run("unsampled", func(b *testing.B) { benchChain(b, false, "set_header") })
	b.Run("sampled", func(b *testing.B) { benchChain(b, true, "set_header") })
	// What deadline enforcement (the compiled loop checks) costs.
	b.Run("unsampled-nodeadline", func(b *testing.B) { benchChainOpts(b, false, runtime.WithoutDeadlines, "set_header") })
}

func BenchmarkChain_ThreeFilters(b *testing.B) {
	b.Run("unsampled", func(b *testing.B) { benchChain(b, false, "noop", "set_header", "reqctx") })
	b.Run("sampled", func(b *testing.B) { benchChain(b, true, "noop", "set_header", "reqctx") })
}
