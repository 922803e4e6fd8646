package host

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/generation"
	"github.com/sluicehq/sluice/host/proxy"
	"github.com/sluicehq/sluice/host/tlsconf/tlstest"
)

// hopHeaders are the headers the hop-by-hop tests read upstream.
var hopHeaders = []string{"X-Forwarded-For", "Forwarded", "X-Forwarded-Proto", "X-Forwarded-Host", "X-Added", "X-Mine", testIDHeader}

// hopBackend answers with the hopHeaders it got, one "Name=value" line
// each.
func hopBackend(t *testing.T) *httptest.Server {
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, h := range hopHeaders {
			fmt.Fprintf(w, "%s=%s\n", h, r.Header.Get(h))
		}
	}))
	t.Cleanup(be.Close)
	return be
}

// TestHopByHopClientOnly: a client's Connection header names fields of
// its own for removal (RFC 9110, 7.6.1), never the ones sluice adds:
// X-Forwarded-For, Forwarded, X-Forwarded-Proto and -Host, a header_up
// addition, through the listener and every engine that carries
// Connection (HTTP/1.1). The client's own X-Mine, which it named, goes.
func TestHopByHopClientOnly(t *testing.T) {
	be := hopBackend(t)
	srv := startConfig(t, `
site "a.test" {
  listen = ["127.0.0.1:PORT"]
  route "/" {
    proxy {
      upstreams = ["`+be.URL+`"]
      header_up { add = { "X-Added" = "by-sluice" } }
    }
  }
}
`)
	addr := strings.TrimPrefix(srv.URL, "http://")
	urls := map[string]string{"listener": addr}
	for _, e := range exchangetest.Engines(t, srv.Inst.Server().dispatchAt(addr)) {
		if e.Proto == "HTTP/1.1" {
			urls[e.Name] = e.Addr()
		}
	}
	conn := "X-Forwarded-For, Forwarded, X-Forwarded-Proto, X-Forwarded-Host, X-Added, X-Mine, " + testIDHeader
	for name, a := range urls {
		status, body, _ := rawExchange(t, a, "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: "+conn+
			"\r\nX-Mine: 1\r\nX-Forwarded-For: 6.6.6.6\r\n\r\n")
		if status != 200 {
			t.Fatalf("%s: %d %q", name, status, body)
		}
		for _, want := range []string{"X-Forwarded-For=127.0.0.1\n", "Forwarded=for=127.0.0.1;proto=http;host=a.test\n",
			"X-Forwarded-Proto=http\n", "X-Forwarded-Host=a.test\n", "X-Added=by-sluice\n", "X-Mine=\n"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: upstream got\n%s\nwant %q", name, body, want)
			}
		}
	}
}

// TestHopByHopIdentity is the finding: "Connection: X-Client-Subject"
// from a client with a certificate removed its identity header on the
// way upstream. The header is sluice's, set after the client's
// Connection options were applied; it reaches the upstream.
func TestHopByHopIdentity(t *testing.T) {
	be := hopBackend(t)
	e := newTLSEnv(t, tlstest.Kinds[0])
	clients := tlstest.NewCA(t, tlstest.Kinds[0])
	caFile := filepath.Join(e.dir, "clients.pem")
	if err := os.WriteFile(caFile, clients.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := tlsFreeAddr(t)
	site := e.site(t, "a.test", addr)
	site.TLS.ClientAuth, site.TLS.ClientCA, site.TLS.ClientCertHeader = "require", caFile, testIDHeader
	site.Routes[0].Blocks["proxy"] = &proxy.Options{Upstreams: []proxy.Upstream{{URL: be.URL}}}
	cfg := &config.Config{Sites: []*config.Site{site}, Listeners: []*config.Listener{tlsListenerFor(addr, true, site)}}
	cfg.Server.ShutdownTimeout = 2 * time.Second
	log := slog.New(slog.DiscardHandler)
	srv := NewServer(log)
	g, err := generation.Build(cfg, generation.Deps{Log: log}) // the real proxy
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Apply(g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	alice := clients.Client(t, "alice").TLS(t)
	_, body := tlsGet(t, e.client(t, "h1", &alice), "https://a.test:"+tlsPortOf(addr)+"/",
		"Connection", testIDHeader+", X-Forwarded-For, Forwarded", testIDHeader, "CN=root")
	for _, want := range []string{testIDHeader + "=CN=alice", "X-Forwarded-For=127.0.0.1\n", "Forwarded=for=127.0.0.1;proto=https"} {
		if !strings.Contains(body, want) {
			t.Errorf("upstream got\n%s\nwant %q", body, want)
		}
	}
}
