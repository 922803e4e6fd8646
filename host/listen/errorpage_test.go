package listen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/generation"
	"github.com/sluicehq/sluice/host/proxy"
)

// errorPageConfig has one site with custom pages for 400, 413 and 502;
// each route's proxy is replaced by a handler that sets the headers of
// a response it then gives up on, and fails.
const errorPageConfig = `
listener "127.0.0.1:8080" {}
site "a.test" {
  listen      = ["127.0.0.1:8080"]
  error_pages = { 400 = "DIR/400.html", 413 = "DIR/413.html", 502 = "DIR/502.html" }
  route "/400" {
    proxy { upstreams = ["http://127.0.0.1:9"] }
  }
  route "/413" {
    proxy { upstreams = ["http://127.0.0.1:9"] }
  }
  route "/502" {
    proxy { upstreams = ["http://127.0.0.1:9"] }
  }
  route "/418" {
    proxy { upstreams = ["http://127.0.0.1:9"] }
  }
}
`

// errCause is what the failing handlers give as the cause of their error.
var errCause = errors.New("upstream exploded")

// TestErrorPage: a site's custom error page goes through the one error
// renderer like every other error, on every engine of a listener
// (fasthttp, and HTTP/2 on host/h2 and on net/http): the cause of a 5xx
// is logged, a 400 or 413 page ends an HTTP/1.1 connection (the request
// may still be arriving), and no header of the response the handler gave
// up on (Content-Encoding, ETag, Last-Modified) stays on the page.
func TestErrorPage(t *testing.T) {
	dir := t.TempDir()
	for _, code := range []int{400, 413, 502} {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(code, ".html")), fmt.Appendf(nil, "<p>page %d</p>\n", code), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	g := buildErrorPages(t, dir, log)
	cases := []struct {
		path   string
		status int
		body   string
		close  bool // on HTTP/1.1
		logged bool // the cause is in the log
	}{
		{"/400", 400, "<p>page 400</p>\n", true, false},
		{"/413", 413, "<p>page 413</p>\n", true, false},
		{"/502", 502, "<p>page 502</p>\n", false, true},
		{"/418", 418, "no coffee\n", false, false}, // no page: the plain answer
	}
	for _, e := range errorPageEngines(t, g, log) {
		for _, c := range cases {
			t.Run(e.name+c.path, func(t *testing.T) {
				before := logs.Len()
				resp, err := e.client.Get(e.url + c.path)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != c.status || string(b) != c.body {
					t.Errorf("%d %q, want %d %q", resp.StatusCode, b, c.status, c.body)
				}
				for _, f := range []string{"Content-Encoding", "ETag", "Last-Modified"} {
					if v := resp.Header.Get(f); v != "" {
						t.Errorf("%s: %q stayed from the failed response", f, v)
					}
				}
				if resp.ProtoMajor == 1 && resp.Close != c.close {
					t.Errorf("Connection: close %v, want %v", resp.Close, c.close)
				}
				if got := strings.Contains(logs.From(before), errCause.Error()); got != c.logged {
					t.Errorf("cause logged %v, want %v; log:\n%s", got, c.logged, logs.From(before))
				}
			})
		}
	}
}

func buildErrorPages(t *testing.T, dir string, log *slog.Logger) *generation.Generation {
	t.Helper()
	cfg, diags := config.Parse("errorpages.hcl", []byte(strings.ReplaceAll(errorPageConfig, "DIR", dir)))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	g, err := generation.Build(cfg, generation.Deps{Log: log,
		Proxy: func(_ *proxy.Options, route string) (exchange.Handler, func() error, error) {
			return giveUp(route), nil, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(log) })
	return g
}

// giveUp is a handler that starts a response (an encoded body with its
// validators) and then fails with the route's status.
func giveUp(route string) exchange.Handler {
	return exchange.HandlerFunc(func(x exchange.Exchange) error {
		x.SetResponseHeader("Content-Encoding", "gzip")
		x.SetResponseHeader("ETag", `"v1"`)
		x.SetResponseHeader("Last-Modified", "Mon, 30 Nov 2026 00:00:00 GMT")
		x.SetBody([]byte("\x1f\x8b half a body"))
		switch route {
		case "/400":
			return &exchange.Error{Status: http.StatusBadRequest, Message: "bad request", Err: errCause}
		case "/413":
			return &exchange.Error{Status: http.StatusRequestEntityTooLarge, Message: "too large", Err: errCause}
		case "/502":
			return &exchange.Error{Status: http.StatusBadGateway, Message: "bad gateway", Err: errCause}
		}
		return exchange.Errorf(http.StatusTeapot, "no coffee")
	})
}

type errorPageEngine struct {
	name, url string
	client    *http.Client
}

// errorPageEngines opens two h2c listeners serving g's request path, one
// on each HTTP/2 engine, and returns fasthttp (HTTP/1.1) and both HTTP/2
// engines with a client for each.
func errorPageEngines(t *testing.T, g *generation.Generation, log *slog.Logger) []errorPageEngine {
	t.Helper()
	h := exchange.HandlerFunc(func(x exchange.Exchange) error { return g.Serve(x, "127.0.0.1:8080", "") })
	var h2c http.Protocols
	h2c.SetUnencryptedHTTP2(true)
	h1 := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	h2 := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableCompression: true, Protocols: &h2c}}
	var out []errorPageEngine
	for _, engine := range []string{"sluice", "std"} {
		l, err := Open(Options{Address: "127.0.0.1:0", MaxHeaderBytes: 16 << 10, H2C: true, HTTP2Engine: engine},
			Deps{Log: log, Handler: func(string) exchange.Handler { return h }})
		if err != nil {
			t.Fatal(err)
		}
		l.Serve()
		t.Cleanup(func() {
			h1.CloseIdleConnections()
			h2.CloseIdleConnections()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = l.Shutdown(ctx)
		})
		url := "http://" + l.Addr().String()
		if engine == "sluice" {
			out = append(out, errorPageEngine{"fasthttp", url, h1})
		}
		out = append(out, errorPageEngine{"h2c-" + engine, url, h2})
	}
	return out
}

// lockedBuffer is a log sink the engines' goroutines write to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Len()
}

// From returns what was written from offset i on.
func (l *lockedBuffer) From(i int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()[i:]
}
