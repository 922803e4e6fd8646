package chain_test

import (
	"context"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sluicehq/sluice/host/chain"
	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/static"
	"github.com/sluicehq/sluice/runtime"
)

// The benchmarks serve a 3.4 KB static file (the size of the wrk
// comparison in issue 13) through the fasthttp adapter in process, with
// and without the shipped headers filter setting one response header: no
// network, so the difference is what the chain, the runtime and the guest
// cost per request.

func benchStatic(b testing.TB) exchange.Handler {
	b.Helper()
	dir := b.TempDir()
	p := filepath.Join(dir, "index.html")
	if err := os.WriteFile(p, []byte(strings.Repeat("<p>hello, world</p>\n", 170)), 0o644); err != nil {
		b.Fatal(err)
	}
	// The handler caches a file only once its ctime, which nobody can
	// set back, is 2 s old (host/static: racyWindow); the real server
	// serves a file that old from its cache.
	time.Sleep(2100 * time.Millisecond)
	h, err := static.New(static.Options{Root: dir})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	return h
}

func headersFilter(b testing.TB) *runtime.Filter {
	b.Helper()
	ctx := context.Background()
	wasm, err := os.ReadFile(filepath.Join("..", "..", "filters", "headers", "headers.wasm"))
	if err != nil {
		b.Fatal(err)
	}
	e, err := runtime.NewEngine(ctx, runtime.EngineOptions{NoDiskCache: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close(context.Background()) })
	m, err := e.Compile(ctx, wasm)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close(ctx)
	f, err := e.NewFilter(ctx, "headers", m, runtime.FilterOptions{
		Config:   []byte(`{"response":{"set":{"X-Frame-Options":"DENY"}}}`),
		PoolSize: 1,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		f.Close(ctx)
	})
	return f
}

// fastServer is the fasthttp adapter serving h, and a request for the
// file through it; check fails unless the last response was the file,
// with wantHeader when it is not empty.
func fastServer(tb testing.TB, h exchange.Handler, wantHeader string) (serve func(), check func()) {
	fh := exchange.Fast(h, exchangetest.RenderError, false)
	ctx := new(fasthttp.RequestCtx)
	ctx.Init(&fasthttp.Request{}, nil, nil)
	ctx.Request.Header.SetMethod("GET")
	ctx.Request.SetRequestURI("/index.html")
	serve = func() {
		ctx.Response.Reset()
		fh(ctx)
	}
	check = func() {
		tb.Helper()
		if got := ctx.Response.StatusCode(); got != 200 {
			tb.Fatalf("status %d: %s", got, ctx.Response.Body())
		}
		if wantHeader != "" && string(ctx.Response.Header.Peek(wantHeader)) == "" {
			tb.Fatalf("no %s in the response", wantHeader)
		}
	}
	serve() // warm the cache and the instance
	check()
	return serve, check
}

func benchServe(b *testing.B, h exchange.Handler, wantHeader string) {
	b.Helper()
	serve, check := fastServer(b, h, wantHeader)
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		serve()
	}
	b.StopTimer()
	// CPU time is what the process spends (all threads, GC included); on
	// a loaded machine it is steadier than wall time.
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	check()
}

// BenchmarkChain_Static is the baseline: the static handler alone.
func BenchmarkChain_Static(b *testing.B) {
	benchServe(b, benchStatic(b), "")
}

// BenchmarkChain_HeadersFilter is the same file through a chain of the
// headers filter; the difference to BenchmarkChain_Static is the
// filter's cost per request (two guest invocations).
func BenchmarkChain_HeadersFilter(b *testing.B) {
	h := chain.New([]chain.Filter{headersFilter(b)}, benchStatic(b))
	benchServe(b, h, "X-Frame-Options")
}

// TestChain_HeadersFilterAllocs: a request through the chain and the
// headers filter setting a response header allocates nothing, as the
// static file alone does (the next handler here sets a body, so that
// the test needn't wait for the file to be cacheable): the Call stays on the chain's stack, the
// deadline timer is the instance's, the header's strings are reused.
func TestChain_HeadersFilterAllocs(t *testing.T) {
	page := []byte(strings.Repeat("<p>hello, world</p>\n", 170))
	next := exchange.HandlerFunc(func(x exchange.Exchange) error {
		x.SetBody(page)
		return nil
	})
	h := chain.New([]chain.Filter{headersFilter(t)}, next)
	serve, check := fastServer(t, h, "X-Frame-Options")
	// Finish the garbage of compiling the guest first: a GC cycle during
	// the runs empties fasthttp's sync.Pools, whose refill is counted
	// (seen as 2 allocations a request when the machine was loaded).
	for range 10 {
		serve()
	}
	goruntime.GC()
	if a := testing.AllocsPerRun(200, serve); a != 0 {
		t.Errorf("%.1f allocations per request, want 0", a)
	}
	check()
}
