package proxy_test

import (
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/proxy"
)

// backend starts an HTTP/1.1 server on loopback.
func backend(t testing.TB, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// newProxy builds and starts a proxy handler, closed when t ends.
func newProxy(t testing.TB, o proxy.Options) *proxy.Handler {
	t.Helper()
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	p, err := proxy.New(o)
	if err != nil {
		t.Fatal(err)
	}
	p.Start()
	t.Cleanup(func() { p.Close() })
	return p
}

func get(t testing.TB, e exchangetest.Engine, path string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", e.URL+path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return do(t, e, req)
}

func do(t testing.TB, e exchangetest.Engine, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := e.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: body: %v", req.Method, req.URL, err)
	}
	return resp, string(b)
}

func TestPlain(t *testing.T) {
	big := strings.Repeat("x", 200<<10)
	be := backend(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Length", fmt.Sprint(len(big)))
			io.WriteString(w, big)
			return
		case "/304":
			w.Header().Set("ETag", `"v1"`)
			w.WriteHeader(304)
			return
		case "/204":
			w.WriteHeader(204)
			return
		case "/cookies":
			w.Header().Add("Set-Cookie", "a=1; Path=/")
			w.Header().Add("Set-Cookie", "b=2; Path=/")
			w.Header().Add("X-Multi", "one")
			w.Header().Add("X-Multi", "two")
			w.Header().Set("Transfer-Encoding", "chunked")
			io.WriteString(w, "small chunked")
			return
		case "/post":
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("X-Len", fmt.Sprint(len(b)))
			w.WriteHeader(201)
			w.Write(b)
			return
		}
		w.Header().Set("X-Path", r.URL.RawPath+"|"+r.URL.Path)
		w.Header().Set("X-Query", r.URL.RawQuery)
		w.Header().Set("X-Host", r.Host)
		w.Header().Set("Connection", "X-Secret")
		w.Header().Set("X-Secret", "hop")
		io.WriteString(w, "hello "+r.Method)
	})
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: be.URL}}})
	for _, e := range exchangetest.Engines(t, p) {
		t.Run(e.Name, func(t *testing.T) {
			resp, body := get(t, e, "/a%2Fb/c?x=1&y=%20")
			if resp.StatusCode != 200 || body != "hello GET" {
				t.Fatalf("got %d %q", resp.StatusCode, body)
			}
			if got := resp.Header.Get("X-Path"); got != "/a%2Fb/c|/a/b/c" {
				t.Errorf("path %q", got)
			}
			if got := resp.Header.Get("X-Query"); got != "x=1&y=%20" {
				t.Errorf("query %q", got)
			}
			if got := resp.Header.Get("X-Host"); got != strings.TrimPrefix(be.URL, "http://") {
				t.Errorf("host %q", got)
			}
			if got := resp.Header.Get("X-Secret"); got != "" {
				t.Errorf("connection-listed header passed: %q", got)
			}
			resp, body = get(t, e, "/big")
			if body != big {
				t.Errorf("big: %d bytes, status %d", len(body), resp.StatusCode)
			}
			req, _ := http.NewRequest("POST", e.URL+"/post", strings.NewReader("payload"))
			resp, body = do(t, e, req)
			if resp.StatusCode != 201 || body != "payload" || resp.Header.Get("X-Len") != "7" {
				t.Errorf("post: %d %q %q", resp.StatusCode, body, resp.Header.Get("X-Len"))
			}
			for _, c := range []struct {
				path   string
				status int
			}{{"/304", 304}, {"/204", 204}} {
				resp, body = get(t, e, c.path)
				if resp.StatusCode != c.status || body != "" {
					t.Errorf("%s: %d %q", c.path, resp.StatusCode, body)
				}
			}
			if resp, _ = get(t, e, "/304"); resp.Header.Get("ETag") != `"v1"` {
				t.Errorf("304 lost its ETag: %v", resp.Header)
			}
			resp, body = get(t, e, "/cookies")
			if body != "small chunked" || len(resp.Cookies()) != 2 || strings.Join(resp.Header.Values("X-Multi"), ",") != "one,two" {
				t.Errorf("cookies: %q %v", body, resp.Header)
			}
			req, _ = http.NewRequest("HEAD", e.URL+"/big", nil)
			resp, body = do(t, e, req)
			if resp.StatusCode != 200 || body != "" || resp.ContentLength != int64(len(big)) {
				t.Errorf("head: %d %q cl=%d", resp.StatusCode, body, resp.ContentLength)
			}
		})
	}
}
