package proxy_test

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/proxy"
)

// TestUnwritableNotForwarded: a request the host hands on with a CR, LF
// or NUL in its method or a field (a filter's doing, or an engine's that
// let it through) is refused with 400, on every engine and to HTTP/1.1
// and HTTP/2 upstreams alike, and nothing reaches the upstream, nor is
// the upstream blamed for it.
func TestUnwritableNotForwarded(t *testing.T) {
	var reached atomic.Int32
	h := func(w http.ResponseWriter, r *http.Request) { reached.Add(1) }
	ups := map[string]string{"h1": backend(t, h).URL, "h2c": h2cBackend(t, h)}
	for _, c := range []struct {
		name string
		edit func(x exchange.Exchange)
	}{
		{"method", func(x exchange.Exchange) {
			x.SetMethod("GET /papi/secret.txt HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Junk:")
		}},
		{"value", func(x exchange.Exchange) { x.SetRequestHeader("X-A", "1\r\nX-Evil: 2") }},
		{"NUL", func(x exchange.Exchange) { x.SetRequestHeader("X-A", "1\x00") }},
	} {
		for kind, up := range ups {
			p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: up}}})
			hd := exchange.HandlerFunc(func(x exchange.Exchange) error {
				c.edit(x)
				return p.ServeExchange(x)
			})
			for _, e := range exchangetest.Engines(t, hd) {
				before := reached.Load()
				resp, _ := get(t, e, "/a")
				if resp.StatusCode != http.StatusBadRequest || reached.Load() != before {
					t.Errorf("%s to %s, %s: %d, upstream reached %v; want 400 and not reached",
						c.name, kind, e.Name, resp.StatusCode, reached.Load() != before)
				}
			}
			if st := p.Stats()[0]; st.Failures != 0 || st.InFlight != 0 {
				t.Errorf("%s to %s: stats %+v, want no failure and nothing in flight", c.name, kind, st)
			}
		}
	}
}
