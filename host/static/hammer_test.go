package static

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/valyala/fasthttp"
)

// TestHammerEviction serves many files, in every coding, from many
// goroutines through a cache far too small for them, so that entries and
// compressed variants are evicted while in use.
func TestHammerEviction(t *testing.T) {
	files := map[string]string{}
	for i := 0; i < 40; i++ {
		files[fmt.Sprintf("f%02d.txt", i)] = strings.Repeat(fmt.Sprintf("file %02d compresses well. ", i), 20+i*5)
	}
	h := newHandler(t, Options{Root: writeTree(t, files), Compress: []string{"zstd", "br", "gzip"}, MemCacheMaxBytes: 8 << 10, MemCacheMaxFile: 4 << 10})
	h.cache.maxEntries = 10
	codings := []string{"", "gzip", "br", "zstd", "gzip, br, zstd"}
	var wg sync.WaitGroup
	deadline := time.Now().Add(400 * time.Millisecond)
	for _, e := range exchangetest.Engines(t, h) {
		for g := 0; g < 3; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(g), 7))
				for time.Now().Before(deadline) {
					name := fmt.Sprintf("f%02d.txt", r.IntN(40))
					ae := codings[r.IntN(len(codings))]
					resp, body := do(t, e, "GET", "/"+name, map[string]string{"Accept-Encoding": ae})
					if resp.StatusCode != 200 {
						t.Errorf("%s %s: %d", e.Name, name, resp.StatusCode)
						return
					}
					if got := decode(t, resp.Header.Get("Content-Encoding"), body); got != files[name] {
						t.Errorf("%s %s (%s): wrong body", e.Name, name, ae)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	if n, b := h.cache.len(), h.cache.bytes.Load(); n > 10 || b > 8<<10 || b < 0 {
		t.Errorf("cache holds %d entries, %d bytes", n, b)
	}
}

// TestZeroAlloc guards the fast path: a cached small-file GET, a 304 and
// a cached compressed GET allocate nothing.
func TestZeroAlloc(t *testing.T) {
	h := newHandler(t, Options{Root: writeTree(t, benchFiles), Compress: []string{"gzip"}})
	fh := exchange.Fast(h, exchangetest.RenderError, false)
	e, err := h.entryFor("/index.html")
	must(t, err)
	for _, c := range []struct {
		name, uri string
		hdr       map[string]string
		status    int
	}{
		{"get", "/index.html", nil, 200},
		{"index", "/", nil, 200},
		{"304", "/index.html", map[string]string{"If-None-Match": string(e.etag)}, 304},
		{"gzip", "/index.html", map[string]string{"Accept-Encoding": "gzip"}, 200},
	} {
		var ctx fasthttp.RequestCtx
		ctx.Init(&fasthttp.Request{}, nil, nil)
		ctx.Request.SetRequestURI(c.uri)
		for k, v := range c.hdr {
			ctx.Request.Header.Set(k, v)
		}
		fh(&ctx)
		allocs := testing.AllocsPerRun(100, func() {
			ctx.Response.Reset()
			fh(&ctx)
		})
		if ctx.Response.StatusCode() != c.status {
			t.Errorf("%s: status %d", c.name, ctx.Response.StatusCode())
		}
		if allocs != 0 {
			t.Errorf("%s: %.1f allocs per request, want 0", c.name, allocs)
		}
	}
}

func TestClose(t *testing.T) {
	h, err := New(Options{Root: t.TempDir()})
	must(t, err)
	must(t, h.Close())
}
