package proxy_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/proxy"
	"github.com/valyala/fasthttp"
)

// ---- upstream observers ----

type try struct {
	status int
	d      time.Duration
}

// fakeObserver records what the proxy reports about one upstream.
type fakeObserver struct {
	url    string
	mu     sync.Mutex
	tries  []try
	health []bool
	closed int
}

func (o *fakeObserver) Request(status int, d time.Duration) {
	o.mu.Lock()
	o.tries = append(o.tries, try{status, d})
	o.mu.Unlock()
}

func (o *fakeObserver) SetHealthy(ok bool) {
	o.mu.Lock()
	o.health = append(o.health, ok)
	o.mu.Unlock()
}

func (o *fakeObserver) Close() error {
	o.mu.Lock()
	o.closed++
	o.mu.Unlock()
	return nil
}

func (o *fakeObserver) snapshot() ([]try, []bool, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]try(nil), o.tries...), append([]bool(nil), o.health...), o.closed
}

// observers hands out one fakeObserver per upstream URL.
type observers struct {
	mu  sync.Mutex
	by  map[string]*fakeObserver
	all []string
}

func (os *observers) observe(url string) proxy.UpstreamObserver {
	os.mu.Lock()
	defer os.mu.Unlock()
	if os.by == nil {
		os.by = map[string]*fakeObserver{}
	}
	o := &fakeObserver{url: url}
	os.by[url] = o
	os.all = append(os.all, url)
	return o
}

func (os *observers) get(url string) *fakeObserver {
	os.mu.Lock()
	defer os.mu.Unlock()
	return os.by[url]
}

func TestObserveTries(t *testing.T) {
	good := backend(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, "good")
	})
	dead := deadURL(t)
	var obs observers
	p, err := proxy.New(proxy.Options{
		Upstreams: []proxy.Upstream{{URL: dead}, {URL: good.URL}},
		Passive:   &proxy.Passive{MaxFails: -1},
		Observe:   obs.observe,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.all) != 2 || obs.all[0] != dead || obs.all[1] != good.URL {
		t.Fatalf("Observe called for %v, want once per upstream in order", obs.all)
	}
	e := exchangetest.Engines(t, p)[0]
	for i := 0; i < 4; i++ {
		if resp, body := get(t, e, "/"); resp.StatusCode != 200 || body != "good" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
	}
	if resp, _ := get(t, e, "/missing"); resp.StatusCode != 404 {
		t.Fatalf("/missing: %d", resp.StatusCode)
	}
	deadTries, _, _ := obs.get(dead).snapshot()
	goodTries, _, _ := obs.get(good.URL).snapshot()
	if len(goodTries) != 5 {
		t.Fatalf("good upstream: %d tries reported, want 5: %v", len(goodTries), goodTries)
	}
	var ok, notFound int
	for _, tr := range goodTries {
		switch tr.status {
		case 200:
			ok++
		case 404:
			notFound++
		}
		if tr.d <= 0 {
			t.Errorf("good upstream: try without a duration: %+v", tr)
		}
	}
	if ok != 4 || notFound != 1 {
		t.Errorf("good upstream statuses %v, want four 200 and one 404", goodTries)
	}
	if len(deadTries) == 0 {
		t.Fatal("dead upstream: no tries reported")
	}
	for _, tr := range deadTries {
		if tr.status != 0 {
			t.Errorf("dead upstream reported status %d, want 0", tr.status)
		}
	}
	p.Close()
	p.Close()
	for _, u := range []string{dead, good.URL} {
		if _, _, closed := obs.get(u).snapshot(); closed != 1 {
			t.Errorf("%s: closed %d times, want once", u, closed)
		}
	}
}

func TestObserveNilObserverAndFailedNew(t *testing.T) {
	be := backend(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	p := newProxy(t, proxy.Options{
		Upstreams: []proxy.Upstream{{URL: be.URL}},
		Observe:   func(string) proxy.UpstreamObserver { return nil },
	})
	if resp, body := get(t, exchangetest.Engines(t, p)[0], "/"); resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	// A New that fails after observers were handed out closes them.
	var obs observers
	_, err := proxy.New(proxy.Options{
		Upstreams: []proxy.Upstream{{URL: be.URL}, {URL: "ftp://nope"}},
		Observe:   obs.observe,
	})
	if err == nil {
		t.Fatal("New accepted an ftp upstream")
	}
	if o := obs.get(be.URL); o == nil {
		t.Fatal("no observer for the first upstream")
	} else if _, _, closed := o.snapshot(); closed != 1 {
		t.Errorf("observer of a failed New closed %d times", closed)
	}
}

func TestObservePassiveHealth(t *testing.T) {
	good := backend(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "good") })
	dead := deadURL(t)
	var obs observers
	p := newProxy(t, proxy.Options{
		Upstreams: []proxy.Upstream{{URL: dead}, {URL: good.URL}},
		Passive:   &proxy.Passive{MaxFails: 1, CoolDown: 150 * time.Millisecond},
		Observe:   obs.observe,
	})
	e := exchangetest.Engines(t, p)[0]
	start := time.Now()
	for i := 0; i < 3; i++ {
		get(t, e, "/")
	}
	if _, h, _ := obs.get(dead).snapshot(); len(h) != 1 || h[0] {
		t.Fatalf("dead upstream health reports %v, want [false]", h)
	}
	// The cool-down ends without any request: the readmission is
	// reported all the same.
	if !within(t, 2*time.Second, func() bool { _, h, _ := obs.get(dead).snapshot(); return len(h) == 2 }) {
		t.Fatal("readmission not reported")
	}
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Errorf("readmitted after %v, before the cool-down", took)
	}
	if _, h, _ := obs.get(dead).snapshot(); !h[1] {
		t.Errorf("health reports %v, want [false true]", h)
	}
	if _, h, _ := obs.get(good.URL).snapshot(); len(h) != 0 {
		t.Errorf("good upstream health reports %v, want none", h)
	}
}

func TestObserveActiveHealth(t *testing.T) {
	var status atomic.Int32
	status.Store(200)
	be := backend(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			w.WriteHeader(int(status.Load()))
		}
	})
	var obs observers
	p, err := proxy.New(proxy.Options{
		Upstreams: []proxy.Upstream{{URL: be.URL}},
		Health:    &proxy.HealthCheck{Path: "/health", Interval: 10 * time.Millisecond, Timeout: time.Second, Rise: 1, Fall: 1},
		Observe:   obs.observe,
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	p.Start()
	o := obs.get(be.URL)
	health := func() []bool { _, h, _ := o.snapshot(); return h }
	status.Store(503)
	if !within(t, 2*time.Second, func() bool { return len(health()) >= 1 }) {
		t.Fatal("down not reported")
	}
	status.Store(200)
	if !within(t, 2*time.Second, func() bool { return len(health()) >= 2 }) {
		t.Fatal("up not reported")
	}
	if h := health(); h[0] || !h[1] {
		t.Errorf("health reports %v, want [false true]", h)
	}
	p.Close()
	n := len(health())
	status.Store(503)
	time.Sleep(50 * time.Millisecond)
	if h := health(); len(h) != n {
		t.Errorf("health reported after Close: %v", h)
	}
	if _, _, closed := o.snapshot(); closed != 1 {
		t.Errorf("closed %d times", closed)
	}
}

// ---- trace context ----

// traceEcho answers with the trace context headers it got.
func traceEcho(w http.ResponseWriter, r *http.Request) {
	fmt.Fprintf(w, "traceparent=%s\ntracestate=%s\n",
		strings.Join(r.Header.Values("Traceparent"), "|"), strings.Join(r.Header.Values("Tracestate"), "|"))
}

func h2cBackend(t *testing.T, h http.HandlerFunc) string {
	srv := httptest.NewUnstartedServer(h)
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = &protos
	srv.Start()
	t.Cleanup(srv.Close)
	return "h2c://" + strings.TrimPrefix(srv.URL, "http://")
}

// withContext runs p with the exchange's context replaced by ctx(x).
func withContext(p exchange.Handler, ctx func(context.Context) context.Context) exchange.Handler {
	return exchange.HandlerFunc(func(x exchange.Exchange) error {
		x.SetContext(ctx(x.Context()))
		return p.ServeExchange(x)
	})
}

var (
	testTraceID = trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
	testSpanID  = trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}
)

const clientTraceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

func TestTraceContextWithoutSpanPassesThrough(t *testing.T) {
	for _, scheme := range []string{"http", "h2c"} {
		t.Run(scheme, func(t *testing.T) {
			url := backend(t, traceEcho).URL
			if scheme == "h2c" {
				url = h2cBackend(t, traceEcho)
			}
			p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: url}}})
			engines(t, p, func(t *testing.T, e exchangetest.Engine) {
				_, body := get(t, e, "/", "Traceparent", clientTraceparent, "Tracestate", "vendor=1")
				if got := field(body, "traceparent"); got != clientTraceparent {
					t.Errorf("traceparent %q, want the client's", got)
				}
				if got := field(body, "tracestate"); got != "vendor=1" {
					t.Errorf("tracestate %q, want the client's", got)
				}
				_, body = get(t, e, "/")
				if got := field(body, "traceparent"); got != "" {
					t.Errorf("traceparent %q made up without a span", got)
				}
			})
		})
	}
}

func TestTraceContextUnsampledSpanReplacesClients(t *testing.T) {
	ts, _ := trace.ParseTraceState("sluice=abc,other=1")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: testTraceID, SpanID: testSpanID, TraceState: ts})
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	want := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
	for _, scheme := range []string{"http", "h2c"} {
		t.Run(scheme, func(t *testing.T) {
			url := backend(t, traceEcho).URL
			if scheme == "h2c" {
				url = h2cBackend(t, traceEcho)
			}
			p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: url}}, TracerProvider: tp})
			h := withContext(p, func(c context.Context) context.Context { return trace.ContextWithSpanContext(c, sc) })
			for _, e := range exchangetest.Engines(t, h) {
				t.Run(e.Name, func(t *testing.T) {
					for _, hdr := range [][]string{nil, {"traceparent", clientTraceparent, "TraceState", "vendor=1"}} {
						_, body := get(t, e, "/", hdr...)
						if got := field(body, "traceparent"); got != want {
							t.Errorf("traceparent %q, want %q", got, want)
						}
						if got := field(body, "tracestate"); got != "sluice=abc,other=1" {
							t.Errorf("tracestate %q, want ours", got)
						}
					}
				})
			}
		})
	}
	if n := len(exp.GetSpans()); n != 0 {
		t.Errorf("%d client spans for an unsampled request", n)
	}
}

func TestTraceContextInjectedOnUpgrade(t *testing.T) {
	be := backend(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Traceparent", r.Header.Get("Traceparent"))
		w.WriteHeader(403) // refuse the upgrade: the answer is relayed
	})
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: testTraceID, SpanID: testSpanID})
	var obs observers
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: be.URL}}, Observe: obs.observe})
	h := withContext(p, func(c context.Context) context.Context { return trace.ContextWithSpanContext(c, sc) })
	e := exchangetest.Engines(t, h)[0]
	resp, _ := get(t, e, "/ws", "Connection", "Upgrade", "Upgrade", "websocket", "Traceparent", clientTraceparent)
	if got, want := resp.Header.Get("X-Traceparent"), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"; resp.StatusCode != 403 || got != want {
		t.Errorf("upgrade: %d, traceparent %q, want %q", resp.StatusCode, got, want)
	}
	if tries, _, _ := obs.get(be.URL).snapshot(); len(tries) != 1 || tries[0].status != 403 {
		t.Errorf("upgrade tries %v, want one 403", tries)
	}
}

// tracedProxy runs p under a server span of tp, as the host's observer
// does.
func tracedProxy(tp trace.TracerProvider, p exchange.Handler) exchange.Handler {
	tracer := tp.Tracer("test")
	return exchange.HandlerFunc(func(x exchange.Exchange) error {
		carrier := propagation.HeaderCarrier(http.Header{})
		if v := x.RequestHeader("Traceparent"); v != nil {
			carrier.Set("traceparent", string(v))
		}
		ctx := propagation.TraceContext{}.Extract(x.Context(), carrier)
		ctx, span := tracer.Start(ctx, "server", trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		x.SetContext(ctx)
		return p.ServeExchange(x)
	})
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, a := range s.Attributes {
		m[a.Key] = a.Value
	}
	return m
}

func TestClientSpanPerTry(t *testing.T) {
	good := backend(t, traceEcho)
	dead := deadURL(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
	defer tp.Shutdown(context.Background())
	p := newProxy(t, proxy.Options{
		Upstreams:      []proxy.Upstream{{URL: dead}, {URL: good.URL}},
		Passive:        &proxy.Passive{MaxFails: -1},
		TracerProvider: tp,
	})
	e := exchangetest.Engines(t, tracedProxy(tp, p))[0]
	// Round robin starts with the dead upstream: one failed try, then one
	// that works, each with its span.
	_, body := get(t, e, "/a/b?q=1", "Traceparent", clientTraceparent)
	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want server + 2 client: %v", len(spans), spans)
	}
	var server tracetest.SpanStub
	var clients []tracetest.SpanStub
	for _, s := range spans {
		if s.SpanKind == trace.SpanKindServer {
			server = s
		} else {
			clients = append(clients, s)
		}
	}
	if server.SpanContext.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
		t.Fatalf("server span not in the client's trace: %v", server.SpanContext.TraceID())
	}
	if len(clients) != 2 {
		t.Fatalf("client spans %v", clients)
	}
	failed, ok := clients[0], clients[1]
	for _, s := range clients {
		if s.Name != "GET" || s.SpanKind != trace.SpanKindClient {
			t.Errorf("span %q kind %v, want GET client", s.Name, s.SpanKind)
		}
		if s.Parent.SpanID() != server.SpanContext.SpanID() || s.SpanContext.TraceID() != server.SpanContext.TraceID() {
			t.Errorf("client span %v not a child of the server span", s.SpanContext)
		}
		if a := attrs(s); a["http.request.method"].AsString() != "GET" || a["server.address"].AsString() != "127.0.0.1" || a["server.port"].AsInt64() == 0 {
			t.Errorf("client span attributes %v", s.Attributes)
		}
	}
	if a := attrs(failed); a["url.full"].AsString() != dead+"/a/b?q=1" || a["error.type"].AsString() != "connect_error" ||
		failed.Status.Code != codes.Error || a["http.response.status_code"].Type() != attribute.INVALID {
		t.Errorf("failed try: %v %v", failed.Attributes, failed.Status)
	}
	if a := attrs(ok); a["url.full"].AsString() != good.URL+"/a/b?q=1" || a["http.response.status_code"].AsInt64() != 200 ||
		a["server.port"].AsInt64() != int64(good.Listener.Addr().(*net.TCPAddr).Port) {
		t.Errorf("good try: %v", ok.Attributes)
	}
	if ok.Status.Code == codes.Error {
		t.Errorf("good try has error status %v", ok.Status)
	}
	// The upstream saw the good try's span as its parent.
	want := fmt.Sprintf("00-%s-%s-01", ok.SpanContext.TraceID(), ok.SpanContext.SpanID())
	if got := field(body, "traceparent"); got != want {
		t.Errorf("upstream got traceparent %q, want %q (the client span's)", got, want)
	}
}

func TestClientSpanStatusAndMethods(t *testing.T) {
	be := backend(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) })
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	url := h2cBackend(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(404) })
	for _, c := range []struct {
		up, method, name, status, orig string
		code                           int64
	}{
		{be.URL, "POST", "POST", "503", "", 503},
		{url, "PURGE", "HTTP", "404", "PURGE", 404},
	} {
		exp.Reset()
		p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: c.up}}, TracerProvider: tp})
		e := exchangetest.Engines(t, tracedProxy(tp, p))[0]
		req, _ := http.NewRequest(c.method, e.URL+"/x", nil)
		do(t, e, req)
		var client *tracetest.SpanStub
		for _, s := range exp.GetSpans() {
			if s.SpanKind == trace.SpanKindClient {
				client = &s
			}
		}
		if client == nil {
			t.Fatalf("%s: no client span", c.method)
		}
		a := attrs(*client)
		if client.Name != c.name || a["http.response.status_code"].AsInt64() != c.code || a["error.type"].AsString() != c.status ||
			client.Status.Code != codes.Error || a["http.request.method_original"].AsString() != c.orig {
			t.Errorf("%s: span %q %v %v", c.method, client.Name, client.Attributes, client.Status)
		}
		if c.orig != "" && a["http.request.method"].AsString() != "_OTHER" {
			t.Errorf("%s: method %v", c.method, a["http.request.method"])
		}
		if strings.HasPrefix(c.up, "h2c://") && !strings.HasPrefix(a["url.full"].AsString(), "http://") {
			t.Errorf("h2c url.full %q", a["url.full"].AsString())
		}
	}
}

// TestTraceparentMatchesPropagator: the proxy's own encoding is the
// propagator's.
func TestTraceparentMatchesPropagator(t *testing.T) {
	for _, flags := range []trace.TraceFlags{0, trace.FlagsSampled, trace.FlagsSampled | trace.FlagsRandom, 0xff} {
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: testTraceID, SpanID: testSpanID, TraceFlags: flags})
		carrier := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), carrier)
		if got, want := proxy.Traceparent(sc), carrier["traceparent"]; got != want {
			t.Errorf("flags %#x: %q, propagator writes %q", flags, got, want)
		}
	}
}

// TestObservedProxyAllocatesNothing: upstream metrics and the trace
// context of an unsampled span cost no allocation on the fast path.
func TestObservedProxyAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	url := fastBackend(t, strings.Repeat("b", 1024))
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: url}},
		Observe: func(string) proxy.UpstreamObserver { return new(countObserver) }})
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: testTraceID, SpanID: testSpanID})
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{{"no span", nil}, {"unsampled span", trace.ContextWithSpanContext(context.Background(), sc)}} {
		h := exchange.Fast(exchange.HandlerFunc(func(x exchange.Exchange) error {
			if c.ctx != nil {
				x.SetContext(c.ctx)
			}
			return p.ServeExchange(x)
		}), exchangetest.RenderError, false)
		var req fasthttp.Request
		req.Header.SetMethod("GET")
		req.SetRequestURI("/x")
		req.Header.SetHost("example.com")
		req.Header.Set("Traceparent", clientTraceparent)
		ctx := new(fasthttp.RequestCtx)
		ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 4242}, nil)
		run := func() {
			ctx.Response.Reset()
			h(ctx)
			if ctx.Response.StatusCode() != 200 {
				t.Fatalf("%s: status %d", c.name, ctx.Response.StatusCode())
			}
		}
		for i := 0; i < 10; i++ {
			run()
		}
		if n := testing.AllocsPerRun(200, run); n != 0 {
			t.Errorf("%s: %v allocations per request", c.name, n)
		}
	}
}
