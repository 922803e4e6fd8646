package static

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/valyala/fasthttp"
)

// The benchmarks call the handler through the fasthttp adapter in
// process: no network, so they measure the handler and the adapter only.

var benchFiles = map[string]string{
	"index.html":          strings.Repeat("<p>hello, world</p>\n", 170), // 3.4 KB, like the nginx comparison
	"app.3f9a1c2b.js":     strings.Repeat("function f(){return 42}\n", 140),
	"large.bin":           strings.Repeat("0123456789abcdef", 32<<10), // 512 KiB: sendfile path
	"assets/style.css":    strings.Repeat("body{margin:0}\n", 200),
	"assets/style.css.br": "precompressed",
}

func benchFast(b *testing.B, opts Options, method, uri string, hdr map[string]string, wantStatus int) {
	b.Helper()
	if opts.Root == "" {
		opts.Root = writeTree(b, benchFiles)
	}
	h := newHandler(b, opts)
	fh := exchange.Fast(h, exchangetest.RenderError, false)
	var ctx fasthttp.RequestCtx
	ctx.Init(&fasthttp.Request{}, nil, nil)
	ctx.Request.Header.SetMethod(method)
	ctx.Request.SetRequestURI(uri)
	for k, v := range hdr {
		ctx.Request.Header.Set(k, v)
	}
	fh(&ctx) // warm the cache
	if got := ctx.Response.StatusCode(); got != wantStatus {
		b.Fatalf("status %d, want %d: %s", got, wantStatus, ctx.Response.Body())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ctx.Response.Reset()
		fh(&ctx)
	}
	if got := ctx.Response.StatusCode(); got != wantStatus {
		b.Fatalf("status %d, want %d", got, wantStatus)
	}
}

func BenchmarkStatic_SmallCached(b *testing.B) {
	benchFast(b, Options{}, "GET", "/index.html", nil, 200)
}

func BenchmarkStatic_SmallCachedIndex(b *testing.B) {
	benchFast(b, Options{}, "GET", "/", nil, 200)
}

func BenchmarkStatic_Head(b *testing.B) {
	benchFast(b, Options{}, "HEAD", "/app.3f9a1c2b.js", nil, 200)
}

func BenchmarkStatic_BrowserHeaders(b *testing.B) {
	// What a browser sends, with compression configured but not applying.
	benchFast(b, Options{Precompressed: []string{"br", "gzip"}}, "GET", "/index.html", map[string]string{
		"Accept":          "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
		"Accept-Language": "en-US,en;q=0.5",
		"User-Agent":      "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
	}, 200)
}

func BenchmarkStatic_304(b *testing.B) {
	dir := writeTree(b, benchFiles)
	h := newHandler(b, Options{Root: dir})
	e, err := h.entryFor("/index.html")
	if err != nil {
		b.Fatal(err)
	}
	benchFast(b, Options{Root: dir}, "GET", "/index.html", map[string]string{"If-None-Match": string(e.etag)}, 304)
}

func BenchmarkStatic_304Date(b *testing.B) {
	dir := writeTree(b, benchFiles)
	h := newHandler(b, Options{Root: dir})
	e, _ := h.entryFor("/index.html")
	benchFast(b, Options{Root: dir}, "GET", "/index.html", map[string]string{"If-Modified-Since": string(e.lastMod)}, 304)
}

func BenchmarkStatic_Range(b *testing.B) {
	benchFast(b, Options{}, "GET", "/index.html", map[string]string{"Range": "bytes=100-1099"}, 206)
}

func BenchmarkStatic_Gzip(b *testing.B) {
	benchFast(b, Options{Compress: []string{"gzip"}}, "GET", "/index.html", map[string]string{"Accept-Encoding": "gzip, deflate"}, 200)
}

func BenchmarkStatic_Zstd(b *testing.B) {
	benchFast(b, Options{Compress: []string{"zstd", "br", "gzip"}}, "GET", "/index.html", map[string]string{"Accept-Encoding": "gzip, deflate, br, zstd"}, 200)
}

func BenchmarkStatic_Precompressed(b *testing.B) {
	benchFast(b, Options{Precompressed: []string{"br"}}, "GET", "/assets/style.css", map[string]string{"Accept-Encoding": "gzip, br"}, 200)
}

func BenchmarkStatic_Large(b *testing.B) {
	benchFast(b, Options{}, "GET", "/large.bin", nil, 200)
}

func BenchmarkStatic_NotFound(b *testing.B) {
	benchFast(b, Options{}, "GET", "/missing.html", nil, 404)
}

func BenchmarkStatic_Fallback(b *testing.B) {
	benchFast(b, Options{Fallback: "/index.html"}, "GET", "/app/route", nil, 200)
}

func BenchmarkStatic_SmallCachedParallel(b *testing.B) {
	h := newHandler(b, Options{Root: writeTree(b, benchFiles)})
	fh := exchange.Fast(h, exchangetest.RenderError, false)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var ctx fasthttp.RequestCtx
		ctx.Init(&fasthttp.Request{}, nil, nil)
		ctx.Request.SetRequestURI("/index.html")
		for pb.Next() {
			ctx.Response.Reset()
			fh(&ctx)
		}
		if ctx.Response.StatusCode() != 200 {
			b.Error(ctx.Response.StatusCode())
		}
	})
}

func BenchmarkStatic_SmallCachedStd(b *testing.B) {
	h := newHandler(b, Options{Root: writeTree(b, benchFiles)})
	sh := exchange.Std(h, exchangetest.RenderError)
	req := httptest.NewRequest("GET", "/index.html", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		sh.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}
