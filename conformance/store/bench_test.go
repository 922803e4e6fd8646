//go:build conformance

package store_test

import (
	"net"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/gateway"
	"github.com/sluicehq/sluice/host/store"
)

// BenchmarkRateLimit is the cost of one rate-limit decision: a local
// bucket, the Redis bucket with a round trip per request (allowance 1),
// and the Redis bucket with the default allowance (1 % of a second's
// rate, here 100 requests per round trip). The rate is high enough that
// every request is admitted.
//
//	go test -tags conformance -run '^$' -bench RateLimit -benchmem ./conformance/store/
func BenchmarkRateLimit(b *testing.B) {
	r := startRedis(b)
	s, err := store.Open(store.Options{Address: r.Addr(), Prefix: "bench:"})
	if err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name string
		c    gateway.RateLimit
	}{
		{"local", gateway.RateLimit{Rate: 1e9, Burst: 1 << 30}},
		{"redis-roundtrip", gateway.RateLimit{Rate: 1e9, Burst: 1 << 30, Shared: s, Name: "rt", Allowance: 1}},
		{"redis-allowance", gateway.RateLimit{Rate: 1e9, Burst: 1 << 30, Shared: s, Name: "al"}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			l, err := gateway.NewLimiter(tc.c)
			if err != nil {
				b.Fatal(err)
			}
			var req fasthttp.Request
			req.SetRequestURI("/")
			ctx := new(fasthttp.RequestCtx)
			ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(203, 0, 113, 9), Port: 1}, nil)
			refused := 0
			h := exchange.Fast(exchange.HandlerFunc(func(x exchange.Exchange) error {
				if v, _ := l.Decide(x); v != gateway.Admit {
					refused++
				}
				return nil
			}), exchangetest.RenderError, false)
			b.ReportAllocs()
			for b.Loop() {
				h(ctx)
			}
			if refused > 0 {
				b.Fatalf("%d of %d requests refused: the benchmark measures admission", refused, b.N)
			}
		})
	}
}
