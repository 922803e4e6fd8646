package runtime_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/filtertest"
)

func TestTrace_SpanPerInvocation(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ev := newEnv(t, func(o *runtime.EngineOptions) { o.TracerProvider = tp })
	ok := ev.filter(t, "noop", runtime.FilterOptions{PoolSize: 1})
	bad := ev.filter(t, "unreachable", runtime.FilterOptions{PoolSize: 1})

	ctx, parent := tp.Tracer("test").Start(context.Background(), "server")
	x := filtertest.NewExchange("GET", "/")
	x.Ctx = ctx
	if _, err := roundTrip(ok, x, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(bad, x, nil); err == nil {
		t.Fatal("unreachable did not fail")
	}
	parent.End()

	type want struct{ name, phase, outcome string }
	wants := []want{
		{"filter noop", "request", "ok"},
		{"filter noop", "response", "ok"},
		{"filter unreachable", "request", "trap"},
	}
	var spans []sdktrace.ReadOnlySpan
	for _, s := range exp.GetSpans().Snapshots() {
		if s.Name() != "server" {
			spans = append(spans, s)
		}
	}
	if len(spans) != len(wants) {
		t.Fatalf("%d filter spans, want %d", len(spans), len(wants))
	}
	for i, w := range wants {
		s := spans[i]
		attrs := map[attribute.Key]string{}
		for _, kv := range s.Attributes() {
			attrs[kv.Key] = kv.Value.Emit()
		}
		if s.Name() != w.name || attrs["sluice.filter.phase"] != w.phase || attrs["sluice.filter.outcome"] != w.outcome ||
			attrs["sluice.filter.name"] != w.name[len("filter "):] || len(attrs["sluice.filter.digest"]) != len("sha256:")+64 {
			t.Errorf("span %d = %s %v, want %+v", i, s.Name(), attrs, w)
		}
		if s.Parent().SpanID() != parent.SpanContext().SpanID() || s.SpanKind() != trace.SpanKindInternal {
			t.Errorf("span %d: parent %v kind %v", i, s.Parent().SpanID(), s.SpanKind())
		}
		if wantErr := w.outcome != "ok"; (s.Status().Code == codes.Error) != wantErr {
			t.Errorf("span %d: status %v", i, s.Status())
		}
	}
}

func TestTrace_UnsampledMakesNoSpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(sdktrace.NeverSample()))
	ev := newEnv(t, func(o *runtime.EngineOptions) { o.TracerProvider = tp })
	f := ev.filter(t, "noop", runtime.FilterOptions{PoolSize: 1})
	ctx, parent := tp.Tracer("test").Start(context.Background(), "server")
	x := filtertest.NewExchange("GET", "/")
	x.Ctx = ctx
	if _, err := roundTrip(f, x, nil); err != nil {
		t.Fatal(err)
	}
	parent.End()
	if n := len(exp.GetSpans()); n != 0 {
		t.Errorf("%d spans exported for an unsampled request", n)
	}
}
