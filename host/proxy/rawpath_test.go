package proxy_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/proxy"
)

// TestRawPath: the path the host marked safe (exchange.SetRawPath) goes
// upstream in place of the canonical one, prefix stripped alike; a path
// a filter rewrote since, or a prefix that strips from one form and not
// the other, sends x.Path().
func TestRawPath(t *testing.T) {
	var mu sync.Mutex
	var got string
	be := backend(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.RequestURI
		mu.Unlock()
	})
	plain := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: be.URL}}})
	strip := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: be.URL}}, StripPrefix: "/api"})
	cases := []struct {
		name, canon, rewrite string
		p                    *proxy.Handler
		raw, want            string
	}{
		{"raw", "/api/projects/a/b", "", plain, "/api/projects/a%2Fb", "/api/projects/a%2Fb?q=1"},
		{"filter rewrote", "/api/projects/a/b", "/other", plain, "/api/projects/a%2Fb", "/other?q=1"},
		{"stripped alike", "/api/projects/a/b", "", strip, "/api/projects/a%2Fb", "/projects/a%2Fb?q=1"},
		{"stripped from one", "/api/x", "", strip, "/%61pi/x", "/x?q=1"},
	}
	for _, c := range cases {
		h := exchange.HandlerFunc(func(x exchange.Exchange) error {
			x.SetRequestURI(c.canon + "?q=1") // what dispatch does
			exchange.SetRawPath(x, []byte(c.raw), []byte(c.canon))
			if c.rewrite != "" { // what a filter may do
				x.SetRequestURI(c.rewrite + "?q=1")
			}
			return c.p.ServeExchange(x)
		})
		for _, e := range exchangetest.Engines(t, h) {
			resp, _ := get(t, e, "/whatever?q=1")
			mu.Lock()
			g := got
			mu.Unlock()
			if resp.StatusCode != 200 || g != c.want {
				t.Errorf("%s, %s: %d, upstream got %q, want %q", c.name, e.Name, resp.StatusCode, g, c.want)
			}
		}
	}
}
