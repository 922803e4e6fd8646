package gateway_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/gateway"
	"github.com/valyala/fasthttp"
)

var ok = exchange.HandlerFunc(func(x exchange.Exchange) error {
	x.SetBody([]byte("ok"))
	return nil
})

func TestRateLimit429(t *testing.T) {
	for _, e := range []string{"fast", "std", "std-h2c", "h2", "h3"} {
		t.Run(e, func(t *testing.T) {
			l, err := gateway.NewLimiter(gateway.RateLimit{Rate: 0.5, Burst: 2, Key: "header:X-Key"})
			if err != nil {
				t.Fatal(err)
			}
			var eng exchangetest.Engine
			for _, x := range exchangetest.Engines(t, gateway.Wrap(ok, l, nil)) {
				if x.Name == e {
					eng = x
				}
			}
			call := func(key string) *http.Response {
				req, _ := http.NewRequest("GET", eng.URL+"/", nil)
				req.Header.Set("X-Key", key)
				resp, err := eng.Client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp
			}
			for i := 0; i < 2; i++ {
				if r := call("a"); r.StatusCode != 200 {
					t.Fatalf("request %d: %d", i, r.StatusCode)
				}
			}
			r := call("a")
			if r.StatusCode != 429 {
				t.Fatalf("third request: %d, want 429", r.StatusCode)
			}
			if ra, _ := strconv.Atoi(r.Header.Get("Retry-After")); ra < 1 || ra > 2 {
				t.Errorf("Retry-After %q, want 1 or 2", r.Header.Get("Retry-After"))
			}
			if r := call("b"); r.StatusCode != 200 {
				t.Errorf("other key: %d", r.StatusCode)
			}
		})
	}
}

func TestRateLimitRefill(t *testing.T) {
	l, _ := gateway.NewLimiter(gateway.RateLimit{Rate: 10, Burst: 1})
	const s = int64(time.Second)
	if ok, _ := l.AllowKey(7, 0); !ok {
		t.Fatal("first denied")
	}
	if ok, wait := l.AllowKey(7, s/100); ok || wait < 80*time.Millisecond || wait > 100*time.Millisecond {
		t.Fatalf("second: ok=%v wait=%v", ok, wait)
	}
	if ok, _ := l.AllowKey(7, s/10+s/100); !ok {
		t.Fatal("after refill: denied")
	}
}

func TestRateLimitBoundedMemory(t *testing.T) {
	l, err := gateway.NewLimiter(gateway.RateLimit{Rate: 1, Burst: 5, MaxKeys: 100000})
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := uint64(1); i <= 1_000_000; i++ {
		l.AllowKey(i*0x9e3779b97f4a7c15, int64(i))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if n := l.Keys(); n > l.Capacity() || l.Capacity() > 2*100000 {
		t.Fatalf("%d keys, capacity %d", n, l.Capacity())
	}
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 1<<20 {
		t.Errorf("heap grew %d bytes over 1e6 keys", grew)
	}
	// A hot key survives a flood of new ones in its set only if it is
	// recent; a fresh flood key is limited like any other.
	if ok, _ := l.AllowKey(42, 2_000_000); !ok {
		t.Error("new key denied")
	}
}

func TestLimiterAllowNoAlloc(t *testing.T) {
	l, _ := gateway.NewLimiter(gateway.RateLimit{Rate: 1e9, Burst: 1000})
	ctx := fastCtx("203.0.113.9")
	h := exchange.Fast(exchange.HandlerFunc(func(x exchange.Exchange) error {
		l.Allow(x)
		return nil
	}), exchangetest.RenderError, false)
	h(ctx)
	if n := testing.AllocsPerRun(1000, func() { h(ctx) }); n != 0 {
		t.Errorf("Allow allocates %v times", n)
	}
}

func fastCtx(ip string) *fasthttp.RequestCtx {
	var req fasthttp.Request
	req.SetRequestURI("/")
	req.Header.SetHost("example.com")
	ctx := new(fasthttp.RequestCtx)
	ctx.Init(&req, &net.TCPAddr{IP: net.ParseIP(ip), Port: 1}, nil)
	return ctx
}

func TestACL(t *testing.T) {
	a, err := gateway.NewACL([]string{"10.0.0.0/8", "192.0.2.7", "2001:db8::/32"}, []string{"10.1.0.0/16", "2001:db8:bad::/48"})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]bool{
		"10.2.3.4": true, "10.1.2.3": false, "192.0.2.7": true, "192.0.2.8": false,
		"::ffff:10.2.3.4": true, "2001:db8::1": true, "2001:db8:bad::1": false, "2001:db9::1": false,
	}
	for s, want := range cases {
		if got := a.Allowed(netip.MustParseAddr(s)); got != want {
			t.Errorf("%s: %v, want %v", s, got, want)
		}
	}
	deny, _ := gateway.NewACL(nil, []string{"127.0.0.1"})
	if deny.Allowed(netip.MustParseAddr("127.0.0.1")) || !deny.Allowed(netip.MustParseAddr("127.0.0.2")) {
		t.Error("deny-only list")
	}
	if _, err := gateway.NewACL([]string{"nope"}, nil); err == nil {
		t.Error("bad entry accepted")
	}
}

func TestWrapACL(t *testing.T) {
	deny, _ := gateway.NewACL(nil, []string{"127.0.0.0/8"})
	allowXFF, _ := gateway.NewACL([]string{"198.51.100.0/24"}, nil)
	allowXFF.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	for _, e := range exchangetest.Engines(t, gateway.Wrap(ok, nil, deny)) {
		resp, err := e.Client.Get(e.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Errorf("%s: %d, want 403", e.Name, resp.StatusCode)
		}
	}
	for _, e := range exchangetest.Engines(t, gateway.Wrap(ok, nil, allowXFF)) {
		for xff, want := range map[string]int{"198.51.100.4": 200, "203.0.113.1": 403, "198.51.100.4, 203.0.113.1": 403} {
			req, _ := http.NewRequest("GET", e.URL+"/", nil)
			req.Header.Set("X-Forwarded-For", xff)
			resp, err := e.Client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("%s: XFF %q: %d, want %d", e.Name, xff, resp.StatusCode, want)
			}
		}
	}
}

func BenchmarkLimiter_Allow(b *testing.B) {
	l, _ := gateway.NewLimiter(gateway.RateLimit{Rate: 1e9, Burst: 1000})
	b.Run("exchange", func(b *testing.B) {
		ctx := fastCtx("203.0.113.9")
		h := exchange.Fast(exchange.HandlerFunc(func(x exchange.Exchange) error {
			l.Allow(x)
			return nil
		}), exchangetest.RenderError, false)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			h(ctx)
		}
	})
	b.Run("key-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := uint64(0)
			for pb.Next() {
				i++
				l.AllowKey(i*0x9e3779b97f4a7c15%200000+1, time.Now().UnixNano())
			}
		})
	})
}

var _ = fmt.Sprint
