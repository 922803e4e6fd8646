package frontdoor_test

import (
	"bufio"
	"net"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/frontdoor"
	"github.com/sluicehq/sluice/host/route"
	"github.com/valyala/fasthttp"
)

// BenchmarkDoor_Serve is the front door's cost per request on the
// fasthttp adapter, beside the site lookup alone that dispatch made
// before the door existed.
func BenchmarkDoor_Serve(b *testing.B) {
	const head = "GET /index.html HTTP/1.1\r\nHost: example.com\r\nUser-Agent: bench\r\n" +
		"Accept: */*\r\nAccept-Encoding: gzip\r\n\r\n"
	site := &route.Site{Name: "example.com", Hosts: []string{"example.com"}}
	table, err := route.NewTable([]*route.Site{site})
	if err != nil {
		b.Fatal(err)
	}
	door := &frontdoor.Door{Sites: table, Strip: []string{"X-Client-Subject"}, MaxRequestBody: 16 << 20}
	next := func(*route.Site) error { return nil }
	for _, c := range []struct {
		name string
		h    exchange.HandlerFunc
	}{
		{"site-lookup-only", func(x exchange.Exchange) error {
			if table.Site(x.Host()) == nil {
				b.Fatal("no site")
			}
			return nil
		}},
		{"door", func(x exchange.Exchange) error { return door.Serve(x, "", next) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			var req fasthttp.Request
			if err := req.Header.Read(bufio.NewReader(strings.NewReader(head))); err != nil {
				b.Fatal(err)
			}
			ctx := new(fasthttp.RequestCtx)
			ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 4242}, nil)
			h := exchange.Fast(c.h, exchangetest.RenderError, false)
			h(ctx)
			if ctx.Response.StatusCode() != 200 {
				b.Fatalf("status %d", ctx.Response.StatusCode())
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				h(ctx)
			}
		})
	}
}
