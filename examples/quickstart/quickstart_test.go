package quickstart_test

import (
	"bytes"
	"compress/gzip"
	"github.com/sluicehq/sluice/examples/internal/exampletest"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

// filterHeaders are the response headers sluice.hcl has the headers
// filter set.
var filterHeaders = map[string]string{
	"X-Frame-Options":    "DENY",
	"Referrer-Policy":    "strict-origin-when-cross-origin",
	"Permissions-Policy": "camera=(), microphone=(), geolocation=()",
}

// TestQuickstart boots sluice.hcl (on free ports) and checks what the
// README promises: the page, the filter's headers, compression, HEAD,
// conditional requests and 404.
func TestQuickstart(t *testing.T) {
	site, admin := boot(t)
	index, err := os.ReadFile("public/index.html")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("index", func(t *testing.T) {
		resp, body := do(t, "GET", site+"/", nil)
		if resp.StatusCode != 200 || !bytes.Equal(body, index) {
			t.Fatalf("GET /: %d, body %d bytes, want 200 with public/index.html (%d bytes)", resp.StatusCode, len(body), len(index))
		}
		want := map[string]string{
			"Content-Type":           "text/html; charset=utf-8",
			"Cache-Control":          "no-cache",
			"X-Content-Type-Options": "nosniff",
		}
		for k, v := range filterHeaders {
			want[k] = v
		}
		for k, v := range want {
			if got := resp.Header.Get(k); got != v {
				t.Errorf("GET /: %s = %q, want %q", k, got, v)
			}
		}
		if resp.Header.Get("ETag") == "" || resp.Header.Get("Last-Modified") == "" {
			t.Errorf("GET /: no validators: ETag %q Last-Modified %q", resp.Header.Get("ETag"), resp.Header.Get("Last-Modified"))
		}
	})

	t.Run("stylesheet", func(t *testing.T) {
		resp, body := do(t, "GET", site+"/style.css", nil)
		css, _ := os.ReadFile("public/style.css")
		if resp.StatusCode != 200 || !bytes.Equal(body, css) || resp.Header.Get("Content-Type") != "text/css; charset=utf-8" {
			t.Errorf("GET /style.css: %d %q, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
		}
		if resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET /style.css: the filter did not run: X-Frame-Options %q", resp.Header.Get("X-Frame-Options"))
		}
	})

	t.Run("missing", func(t *testing.T) {
		for _, p := range []string{"/nope.html", "/nope/", "/.git/config"} {
			resp, _ := do(t, "GET", site+p, nil)
			if resp.StatusCode != 404 {
				t.Errorf("GET %s: %d, want 404", p, resp.StatusCode)
			}
		}
	})

	t.Run("compressed", func(t *testing.T) {
		for _, c := range []struct {
			accept, coding string
			decode         func(io.Reader) (io.Reader, error)
		}{
			{"br", "br", func(r io.Reader) (io.Reader, error) { return brotli.NewReader(r), nil }},
			{"gzip", "gzip", func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }},
			{"zstd", "zstd", func(r io.Reader) (io.Reader, error) { return zstd.NewReader(r) }},
			{"gzip, br", "br", func(r io.Reader) (io.Reader, error) { return brotli.NewReader(r), nil }}, // ties go to the configured order
			{"gzip;q=1, br;q=0.5", "gzip", func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }},
		} {
			resp, body := do(t, "GET", site+"/", http.Header{"Accept-Encoding": {c.accept}})
			if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != c.coding {
				t.Errorf("Accept-Encoding %q: %d Content-Encoding %q, want 200 %s", c.accept, resp.StatusCode, resp.Header.Get("Content-Encoding"), c.coding)
				continue
			}
			if len(body) >= len(index) {
				t.Errorf("Accept-Encoding %q: %d bytes, not smaller than %d", c.accept, len(body), len(index))
			}
			if !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
				t.Errorf("Accept-Encoding %q: Vary %q", c.accept, resp.Header.Get("Vary"))
			}
			r, err := c.decode(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if plain, err := io.ReadAll(r); err != nil || !bytes.Equal(plain, index) {
				t.Errorf("Accept-Encoding %q: decoded %d bytes (err %v), want public/index.html", c.accept, len(plain), err)
			}
			if resp.Header.Get("X-Frame-Options") != "DENY" {
				t.Errorf("Accept-Encoding %q: the filter did not run", c.accept)
			}
		}
	})

	t.Run("head", func(t *testing.T) {
		resp, body := do(t, "HEAD", site+"/", nil)
		if resp.StatusCode != 200 || len(body) != 0 || resp.ContentLength != int64(len(index)) {
			t.Errorf("HEAD /: %d, body %d bytes, Content-Length %d; want 200, none, %d", resp.StatusCode, len(body), resp.ContentLength, len(index))
		}
		if resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("HEAD /: the filter did not run")
		}
	})

	t.Run("conditional", func(t *testing.T) {
		first, _ := do(t, "GET", site+"/", nil)
		etag, modified := first.Header.Get("ETag"), first.Header.Get("Last-Modified")
		for _, h := range []http.Header{
			{"If-None-Match": {etag}},
			{"If-None-Match": {`"other", ` + etag}},
			{"If-Modified-Since": {modified}},
		} {
			resp, body := do(t, "GET", site+"/", h)
			if resp.StatusCode != 304 || len(body) != 0 {
				t.Errorf("GET / with %v: %d, body %d bytes, want 304 and none", h, resp.StatusCode, len(body))
			}
			if resp.Header.Get("ETag") != etag {
				t.Errorf("GET / with %v: 304 ETag %q, want %q", h, resp.Header.Get("ETag"), etag)
			}
		}
		if resp, _ := do(t, "GET", site+"/", http.Header{"If-None-Match": {`"stale"`}}); resp.StatusCode != 200 {
			t.Errorf("GET / with a stale ETag: %d, want 200", resp.StatusCode)
		}
	})

	t.Run("admin", func(t *testing.T) {
		if resp, _ := do(t, "GET", admin+"/healthz", nil); resp.StatusCode != 200 {
			t.Errorf("admin /healthz: %d", resp.StatusCode)
		}
		resp, body := do(t, "GET", admin+"/metrics", nil)
		if resp.StatusCode != 200 || !regexp.MustCompile(`sluice_filter_invocations_total\{[^}]*filter="security-headers"`).Match(body) {
			t.Errorf("admin /metrics: %d, no sluice_filter_invocations_total for security-headers", resp.StatusCode)
		}
	})
}

func do(t *testing.T, method, url string, h http.Header) (*http.Response, []byte) {
	t.Helper()
	return exampletest.Do(t, method, url, h)
}

// boot starts sluice.hcl with its listen and admin addresses moved to
// free ports, and returns the base URLs of the site and the admin API.
func boot(t *testing.T) (site, admin string) {
	t.Helper()
	siteAddr, adminAddr := exampletest.FreeAddr(t), exampletest.FreeAddr(t)
	exampletest.Boot(t, map[string]string{"127.0.0.1:8080": siteAddr, "127.0.0.1:2019": adminAddr})
	return "http://" + siteAddr, "http://" + adminAddr
}
