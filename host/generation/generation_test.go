package generation

import (
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
)

// serveConfig has one listener with two sites; the "/inflight/" route of
// "a.test" is replaced by Deps.Wrap with one that reports the
// generation's in-flight count.
const serveConfig = `
listener "127.0.0.1:8080" {}
site "a.test" {
  listen = ["127.0.0.1:8080"]
  route "/" {
    respond { body = "a /" }
  }
  route "/api/" {
    respond { body = "a /api/" }
  }
  route "/inflight/" {
    respond {}
  }
}
site "b.test" {
  listen  = ["127.0.0.1:8080"]
  default = true
  route "/" {
    respond { body = "b /" }
  }
}
`

// TestServe runs a built generation's request path (front door, canonical
// path, route) behind every engine, as the server's dispatch does.
func TestServe(t *testing.T) {
	const addr = "127.0.0.1:8080"
	cfg, diags := config.Parse("serve.hcl", []byte(serveConfig))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	log := slog.New(slog.DiscardHandler)
	var g *Generation
	g, err := Build(cfg, Deps{Log: log, Wrap: func(site, route string, h exchange.Handler) exchange.Handler {
		if route != "/inflight/" {
			return h
		}
		return exchange.HandlerFunc(func(x exchange.Exchange) error {
			x.SetBody([]byte("inflight " + strconv.FormatInt(g.InFlight(), 10)))
			return nil
		})
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(log) })
	h := exchange.HandlerFunc(func(x exchange.Exchange) error { return g.Serve(x, addr, "") })
	cases := []struct {
		host, path string
		status     int
		body       string
	}{
		{"a.test", "/", 200, "a /"},
		{"a.test", "/api/x", 200, "a /api/"},
		{"a.test", "/x/../api/y", 200, "a /api/"},   // the canonical path routes
		{"a.test", "/%61pi/y", 200, "a /api/"},      // decoded once
		{"a.test", "/apix", 200, "a /"},             // segment boundaries
		{"A.TEST:8080", "/api/", 200, "a /api/"},    // the authority, port and case aside
		{"c.test", "/", 200, "b /"},                 // the default site
		{"a.test", "/inflight/", 200, "inflight 1"}, // this request, counted
		{"a.test", "/a%00b", 400, "bad request"},    // a NUL: malformed
	}
	for _, en := range exchangetest.Engines(t, h) {
		for _, c := range cases {
			req, err := http.NewRequest("GET", en.URL+c.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = c.host
			resp, err := en.Client.Do(req)
			if err != nil {
				t.Fatalf("%s %s%s: %v", en.Name, c.host, c.path, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status || strings.TrimSpace(string(b)) != c.body {
				t.Errorf("%s %s%s: %d %q, want %d %q", en.Name, c.host, c.path, resp.StatusCode, b, c.status, c.body)
			}
		}
	}
	if n := g.InFlight(); n != 0 {
		t.Errorf("in flight after every request returned: %d", n)
	}
}

// TestServeUnknownListener: a request on an address the generation has
// no front door for is a 404, not a crash.
func TestServeUnknownListener(t *testing.T) {
	g := &Generation{}
	g.DefaultDoors()
	err := g.Serve(nil, "127.0.0.1:9", "")
	if exchange.StatusOf(err) != http.StatusNotFound {
		t.Fatalf("got %v, want a 404", err)
	}
}
