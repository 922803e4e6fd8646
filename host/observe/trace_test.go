package observe

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
)

func newTestTracing(t testing.TB, ratio float64) (*Tracing, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tr, err := NewTracing(TracingOptions{SampleRatio: ratio, Exporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Shutdown(context.Background()) })
	return tr, exp
}

func flushed(t *testing.T, tr *Tracing, exp *tracetest.InMemoryExporter) tracetest.SpanStubs {
	t.Helper()
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return exp.GetSpans()
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

const parentTrace = "4bf92f3577b34da6a3ce929d0e0e4736"

func TestServerSpanOverEngines(t *testing.T) {
	tr, exp := newTestTracing(t, 1)
	var inner trace.SpanContext
	var injected string
	h := (&Observer{Tracing: tr}).Wrap("example.com", "/api/", exchange.HandlerFunc(func(x exchange.Exchange) error {
		inner = trace.SpanContextFromContext(x.Context())
		Inject(x.Context(), func(k, v string) {
			if k == "traceparent" {
				injected = v
			}
		})
		if string(x.Path()) == "/api/fail" {
			return exchange.Errorf(503, "down")
		}
		x.SetStatus(202)
		return nil
	}))
	for _, e := range exchangetest.Engines(t, h) {
		exp.Reset()
		req, _ := http.NewRequest("GET", e.URL+"/api/x?q=1", nil)
		req.Header.Set("Traceparent", "00-"+parentTrace+"-00f067aa0ba902b7-01")
		req.Header.Set("User-Agent", "sluice-test/1")
		resp, err := e.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		spans := flushed(t, tr, exp)
		if len(spans) != 1 {
			t.Fatalf("%s: %d spans, want 1", e.Name, len(spans))
		}
		s := spans[0]
		if s.Name != "GET /api/" || s.SpanKind != trace.SpanKindServer {
			t.Errorf("%s: span %q kind %v", e.Name, s.Name, s.SpanKind)
		}
		if s.SpanContext.TraceID().String() != parentTrace || s.Parent.SpanID().String() != "00f067aa0ba902b7" {
			t.Errorf("%s: trace %s parent %s: traceparent not honoured", e.Name, s.SpanContext.TraceID(), s.Parent.SpanID())
		}
		if inner.SpanID() != s.SpanContext.SpanID() {
			t.Errorf("%s: handler's context holds span %s, want %s", e.Name, inner.SpanID(), s.SpanContext.SpanID())
		}
		if want := "00-" + parentTrace + "-" + s.SpanContext.SpanID().String() + "-01"; injected != want {
			t.Errorf("%s: injected %q, want %q", e.Name, injected, want)
		}
		a := attrs(s)
		want := map[string]any{
			"http.request.method": "GET", "url.path": "/api/x", "url.query": "q=1", "http.route": "/api/",
			"server.address": "example.com", "client.address": "127.0.0.1",
			"user_agent.original": "sluice-test/1", "http.response.status_code": int64(202),
		}
		for k, v := range want {
			if got := a[attribute.Key(k)].AsInterface(); got != v {
				t.Errorf("%s: %s = %v, want %v", e.Name, k, got, v)
			}
		}
		if pv := a["network.protocol.version"].AsString(); pv != strings.TrimPrefix(strings.TrimSuffix(e.Proto, ".0"), "HTTP/") {
			t.Errorf("%s: network.protocol.version = %q for %s", e.Name, pv, e.Proto)
		}

		exp.Reset()
		resp, err = e.Client.Get(e.URL + "/api/fail")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		spans = flushed(t, tr, exp)
		if len(spans) != 1 || spans[0].Status.Code.String() != "Error" || attrs(spans[0])["http.response.status_code"].AsInt64() != 503 {
			t.Errorf("%s: error span = %+v", e.Name, spans)
		}
	}
}

func TestSampling(t *testing.T) {
	tr, exp := newTestTracing(t, 0)
	var sc trace.SpanContext
	h := (&Observer{Tracing: tr}).Wrap("s", "/", exchange.HandlerFunc(func(x exchange.Exchange) error {
		sc = trace.SpanContextFromContext(x.Context())
		return nil
	}))
	// Ratio 0, no parent: not sampled, but the ids still propagate.
	h.ServeExchange(newFake("GET", "/"))
	if sc.IsSampled() || !sc.IsValid() {
		t.Errorf("root span context %v: want valid and not sampled", sc)
	}
	if n := len(flushed(t, tr, exp)); n != 0 {
		t.Errorf("%d spans exported at ratio 0", n)
	}
	// A sampled parent wins over the ratio.
	x := newFake("GET", "/")
	x.reqHdr["traceparent"] = []byte("00-" + parentTrace + "-00f067aa0ba902b7-01")
	h.ServeExchange(x)
	if n := len(flushed(t, tr, exp)); n != 1 {
		t.Errorf("%d spans exported under a sampled parent, want 1", n)
	}
}

func TestInjectWithoutSpan(t *testing.T) {
	called := false
	Inject(context.Background(), func(string, string) { called = true })
	if called {
		t.Error("Inject wrote headers without a span")
	}
}

func TestNewTracingEndpoints(t *testing.T) {
	for _, c := range []struct {
		endpoint, protocol string
		ok                 bool
	}{
		{"http://127.0.0.1:4318", "", true},
		{"https://collector.example.com/otlp", "http/protobuf", true},
		{"http://127.0.0.1:4317", "grpc", true},
		{"127.0.0.1:4318", "", false},
		{"http://127.0.0.1:4318", "thrift", false},
	} {
		tr, err := NewTracing(TracingOptions{Endpoint: c.endpoint, Protocol: c.protocol, SampleRatio: 1})
		if (err == nil) != c.ok {
			t.Errorf("%s %s: err = %v, want ok %v", c.endpoint, c.protocol, err, c.ok)
		}
		if tr != nil {
			tr.Shutdown(context.Background())
		}
	}
}

var _ sdktrace.SpanExporter = (*tracetest.InMemoryExporter)(nil)
