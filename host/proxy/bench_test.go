package proxy_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/proxy"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/trace"
)

// fastBackend serves a fixed body with fasthttp on loopback.
func fastBackend(b testing.TB, body string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("text/plain")
		ctx.SetBodyString(body)
	}}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Shutdown() })
	return "http://" + ln.Addr().String()
}

// BenchmarkProxy_KeepAlive drives the fasthttp adapter in process: a
// RequestCtx through exchange.Fast and the proxy to a keep-alive fasthttp
// backend on loopback, 1 KiB responses.
func BenchmarkProxy_KeepAlive(b *testing.B) {
	url := fastBackend(b, strings.Repeat("b", 1024))
	p := newProxy(b, proxy.Options{Upstreams: []proxy.Upstream{{URL: url}}})
	h := exchange.Fast(p, exchangetest.RenderError, false)
	run := func(ctx *fasthttp.RequestCtx) {
		ctx.Response.Reset()
		h(ctx)
		if ctx.Response.StatusCode() != 200 || len(ctx.Response.Body()) != 1024 {
			b.Fatalf("status %d, %d bytes", ctx.Response.StatusCode(), len(ctx.Response.Body()))
		}
	}
	newCtx := func() *fasthttp.RequestCtx {
		var req fasthttp.Request
		req.Header.SetMethod("GET")
		req.SetRequestURI("/bench?x=1")
		req.Header.SetHost("example.com")
		req.Header.Set("User-Agent", "bench")
		req.Header.Set("Accept", "*/*")
		ctx := new(fasthttp.RequestCtx)
		ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 4242}, nil)
		return ctx
	}
	b.Run("serial", func(b *testing.B) {
		ctx := newCtx()
		run(ctx)
		b.ReportAllocs()
		b.ResetTimer()
		c0 := cpuTime()
		for i := 0; i < b.N; i++ {
			run(ctx)
		}
		reportCPU(b, c0)
	})
	b.Run("serial-wire", func(b *testing.B) {
		// The header parsed from wire bytes, as a listener's is: the
		// exchange reads it as sent (RawHeaders), with a Cookie.
		const head = "GET /bench?x=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: bench\r\n" +
			"Accept: */*\r\nCookie: a=1; b=2\r\n\r\n"
		var req fasthttp.Request
		if err := req.Header.Read(bufio.NewReader(strings.NewReader(head))); err != nil {
			b.Fatal(err)
		}
		ctx := new(fasthttp.RequestCtx)
		ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 4242}, nil)
		if len(ctx.Request.Header.RawHeaders()) == 0 {
			b.Fatal("no raw header")
		}
		run(ctx)
		b.ReportAllocs()
		b.ResetTimer()
		c0 := cpuTime()
		for i := 0; i < b.N; i++ {
			run(ctx)
		}
		reportCPU(b, c0)
	})
	b.Run("post-1k", func(b *testing.B) {
		ctx := newCtx()
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetBodyString(strings.Repeat("p", 1024))
		run(ctx)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			run(ctx)
		}
	})
	b.Run("observed", func(b *testing.B) {
		// Upstream metrics on, and a request span that is not sampled:
		// the trace context goes upstream, still without allocating.
		po := newProxy(b, proxy.Options{Upstreams: []proxy.Upstream{{URL: url}},
			Observe: func(string) proxy.UpstreamObserver { return new(countObserver) }})
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}})
		traced := trace.ContextWithSpanContext(context.Background(), sc)
		ho := exchange.Fast(exchange.HandlerFunc(func(x exchange.Exchange) error {
			x.SetContext(traced)
			return po.ServeExchange(x)
		}), exchangetest.RenderError, false)
		ctx := newCtx()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			ctx.Response.Reset()
			ho(ctx)
			if ctx.Response.StatusCode() != 200 || len(ctx.Response.Body()) != 1024 {
				b.Fatalf("status %d, %d bytes", ctx.Response.StatusCode(), len(ctx.Response.Body()))
			}
		}
	})
	b.Run("stream-256k", func(b *testing.B) {
		big := fastBackend(b, strings.Repeat("s", 256<<10))
		ps := newProxy(b, proxy.Options{Upstreams: []proxy.Upstream{{URL: big}}})
		hs := exchange.Fast(ps, exchangetest.RenderError, false)
		ctx := newCtx()
		b.ReportAllocs()
		b.SetBytes(256 << 10)
		var sink countWriter
		for i := 0; i < b.N; i++ {
			ctx.Response.Reset()
			hs(ctx)
			sink = 0
			// Drain the stream as the server would, which closes it.
			if err := ctx.Response.BodyWriteTo(&sink); err != nil || sink != 256<<10 {
				b.Fatalf("%d bytes, %v", sink, err)
			}
		}
	})
	b.Run("hostclient-baseline", func(b *testing.B) {
		// fasthttp's HostClient used the naive way, for comparison.
		hc := &fasthttp.HostClient{Addr: strings.TrimPrefix(url, "http://")}
		ctx := newCtx()
		b.ReportAllocs()
		b.ResetTimer()
		c0 := cpuTime()
		for i := 0; i < b.N; i++ {
			ctx.Response.Reset()
			if err := hc.Do(&ctx.Request, &ctx.Response); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, c0)
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			ctx := newCtx()
			for pb.Next() {
				run(ctx)
			}
		})
	})
}

// BenchmarkProxy_EndToEnd puts each proxy on a loopback listener between a
// fasthttp load client (64 keep-alive connections) and a fasthttp backend,
// so that their throughput can be compared on one machine: sluice
// (exchange.Fast + proxy), fasthttp's HostClient as a naive proxy, and
// net/http's httputil.ReverseProxy. Client and backend costs are the same
// in each, so the ratios understate the proxies' own differences.
func BenchmarkProxy_EndToEnd(b *testing.B) {
	upstream := fastBackend(b, strings.Repeat("b", 1024))
	sluice := newProxy(b, proxy.Options{Upstreams: []proxy.Upstream{{URL: upstream}}})
	hc := &fasthttp.HostClient{Addr: strings.TrimPrefix(upstream, "http://"), MaxConns: 1024}
	target, _ := url.Parse(upstream)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 1024}
	fronts := []struct {
		name  string
		start func(ln net.Listener)
	}{
		{"sluice", func(ln net.Listener) {
			srv := &fasthttp.Server{Handler: exchange.Fast(sluice, exchangetest.RenderError, false), NoDefaultContentType: true}
			go srv.Serve(ln)
			b.Cleanup(func() { srv.Shutdown() })
		}},
		{"fasthttp-hostclient", func(ln net.Listener) {
			srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
				ctx.Request.Header.Del("Connection")
				if err := hc.Do(&ctx.Request, &ctx.Response); err != nil {
					ctx.Error("bad gateway", 502)
				}
				ctx.Response.Header.Del("Connection")
			}}
			go srv.Serve(ln)
			b.Cleanup(func() { srv.Shutdown() })
		}},
		{"httputil", func(ln net.Listener) {
			srv := &http.Server{Handler: rp}
			go srv.Serve(ln)
			b.Cleanup(func() { srv.Close() })
		}},
	}
	for _, f := range fronts {
		b.Run(f.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			f.start(ln)
			client := &fasthttp.HostClient{Addr: ln.Addr().String(), MaxConns: 64}
			b.ReportAllocs()
			b.SetParallelism(32)
			b.ResetTimer()
			c0 := cpuTime()
			defer reportCPU(b, c0)
			b.RunParallel(func(pb *testing.PB) {
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				req.SetRequestURI("http://" + ln.Addr().String() + "/bench")
				for pb.Next() {
					if err := client.Do(req, resp); err != nil || resp.StatusCode() != 200 || len(resp.Body()) != 1024 {
						b.Errorf("%v %d %d", err, resp.StatusCode(), len(resp.Body()))
						return
					}
				}
			})
		})
	}
}

// reportCPU reports the process's CPU time per operation since c0: on a
// busy machine a steadier measure than wall time. It includes the
// in-process backend (and load client), the same for every variant.
func reportCPU(b *testing.B, c0 time.Duration) {
	if c0 > 0 {
		b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
	}
}

type countWriter int

type countObserver struct{ n atomic.Int64 }

func (c *countObserver) Request(int, time.Duration) { c.n.Add(1) }
func (c *countObserver) SetHealthy(bool)            {}
func (c *countObserver) Close() error               { return nil }

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }
