package spa_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"github.com/sluicehq/sluice/examples/internal/exampletest"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

const (
	js        = "app.8419f340.js"
	css       = "app.8f5e12b3.css"
	immutable = "public, max-age=31536000, immutable"
)

// TestSPA boots sluice.hcl and checks the single-page-app behaviour the
// README describes.
func TestSPA(t *testing.T) {
	base := boot(t)
	index := read(t, "public/index.html")
	script := read(t, "public/assets/"+js)

	t.Run("deep links", func(t *testing.T) {
		for _, p := range []string{"/", "/index.html", "/users", "/users/42", "/users/42/", "/about", "/no/such/page", "/favicon.ico"} {
			resp, body := do(t, "GET", base+p, nil)
			if resp.StatusCode != 200 || !bytes.Equal(body, index) {
				t.Errorf("GET %s: %d, %d bytes, want 200 with index.html", p, resp.StatusCode, len(body))
			}
			if ct, cc := resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"); ct != "text/html; charset=utf-8" || cc != "no-cache" {
				t.Errorf("GET %s: Content-Type %q Cache-Control %q, want HTML and no-cache", p, ct, cc)
			}
		}
	})

	t.Run("deep link HEAD and 304", func(t *testing.T) {
		resp, body := do(t, "HEAD", base+"/users/42", nil)
		if resp.StatusCode != 200 || len(body) != 0 || resp.ContentLength != int64(len(index)) {
			t.Errorf("HEAD /users/42: %d, body %d bytes, Content-Length %d", resp.StatusCode, len(body), resp.ContentLength)
		}
		etag := resp.Header.Get("ETag")
		if resp, _ := do(t, "GET", base+"/users/7", http.Header{"If-None-Match": {etag}}); resp.StatusCode != 304 {
			t.Errorf("GET /users/7 If-None-Match %s: %d, want 304 (the same index.html)", etag, resp.StatusCode)
		}
	})

	t.Run("hashed assets", func(t *testing.T) {
		for _, c := range []struct{ name, ctype string }{
			{js, "text/javascript; charset=utf-8"},
			{css, "text/css; charset=utf-8"},
		} {
			resp, body := do(t, "GET", base+"/assets/"+c.name, nil)
			if resp.StatusCode != 200 || !bytes.Equal(body, read(t, "public/assets/"+c.name)) {
				t.Errorf("GET /assets/%s: %d, %d bytes", c.name, resp.StatusCode, len(body))
			}
			if ct, cc := resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"); ct != c.ctype || cc != immutable {
				t.Errorf("GET /assets/%s: Content-Type %q Cache-Control %q, want %q and %q", c.name, ct, cc, c.ctype, immutable)
			}
		}
	})

	t.Run("precompressed", func(t *testing.T) {
		for _, c := range []struct {
			accept, coding, sidecar string
			decode                  func(io.Reader) (io.Reader, error)
		}{
			{"br", "br", ".br", func(r io.Reader) (io.Reader, error) { return brotli.NewReader(r), nil }},
			{"gzip", "gzip", ".gz", func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }},
			{"gzip, deflate, br", "br", ".br", func(r io.Reader) (io.Reader, error) { return brotli.NewReader(r), nil }},
			// No zstd sidecar: compressed on the fly (the default compress list).
			{"zstd", "zstd", "", func(r io.Reader) (io.Reader, error) { return zstd.NewReader(r) }},
		} {
			resp, body := do(t, "GET", base+"/assets/"+js, http.Header{"Accept-Encoding": {c.accept}})
			if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != c.coding {
				t.Errorf("Accept-Encoding %q: %d Content-Encoding %q, want 200 %s", c.accept, resp.StatusCode, resp.Header.Get("Content-Encoding"), c.coding)
				continue
			}
			if c.sidecar != "" && !bytes.Equal(body, read(t, "public/assets/"+js+c.sidecar)) {
				t.Errorf("Accept-Encoding %q: the body is not the committed %s%s", c.accept, js, c.sidecar)
			}
			r, err := c.decode(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if plain, err := io.ReadAll(r); err != nil || !bytes.Equal(plain, script) {
				t.Errorf("Accept-Encoding %q: decodes to %d bytes (err %v), want %s", c.accept, len(plain), err, js)
			}
			if cc, vary := resp.Header.Get("Cache-Control"), resp.Header.Get("Vary"); cc != immutable || !strings.Contains(vary, "Accept-Encoding") {
				t.Errorf("Accept-Encoding %q: Cache-Control %q Vary %q", c.accept, cc, vary)
			}
			if et := resp.Header.Get("ETag"); !strings.HasSuffix(et, `-`+c.coding+`"`) {
				t.Errorf("Accept-Encoding %q: ETag %s, want one for the %s variant", c.accept, et, c.coding)
			}
		}
	})

	t.Run("range", func(t *testing.T) {
		resp, body := do(t, "GET", base+"/assets/"+js, http.Header{"Range": {"bytes=0-99"}, "Accept-Encoding": {"br"}})
		if resp.StatusCode != 206 || !bytes.Equal(body, script[:100]) || resp.Header.Get("Content-Encoding") != "" {
			t.Errorf("Range bytes=0-99: %d, %d bytes, Content-Encoding %q; want 206 with the first 100 plain bytes", resp.StatusCode, len(body), resp.Header.Get("Content-Encoding"))
		}
	})

	t.Run("missing asset", func(t *testing.T) {
		// Under /assets/ there is no fallback: a stale reference is a
		// 404, not index.html served as JavaScript.
		for _, p := range []string{"/assets/app.deadbeef.js", "/assets/", "/assets/nope"} {
			resp, body := do(t, "GET", base+p, nil)
			if resp.StatusCode != 404 || bytes.Contains(body, []byte("<html")) {
				t.Errorf("GET %s: %d %q, want a plain 404", p, resp.StatusCode, body)
			}
		}
	})

	t.Run("other files", func(t *testing.T) {
		resp, body := do(t, "GET", base+"/robots.txt", nil)
		if resp.StatusCode != 200 || !bytes.Equal(body, read(t, "public/robots.txt")) || resp.Header.Get("Cache-Control") != "public, max-age=3600" {
			t.Errorf("GET /robots.txt: %d %q Cache-Control %q", resp.StatusCode, body, resp.Header.Get("Cache-Control"))
		}
		// Dotfiles are never served, nor replaced by the fallback.
		if resp, _ := do(t, "GET", base+"/.env", nil); resp.StatusCode != 404 {
			t.Errorf("GET /.env: %d, want 404", resp.StatusCode)
		}
	})
}

// TestAssets checks the committed files against each other: the hash in
// each asset's name is its content's, the sidecars decode to the asset,
// and index.html names assets that exist.
func TestAssets(t *testing.T) {
	names, _ := filepath.Glob("public/assets/*")
	hashed := regexp.MustCompile(`^[a-z]+\.([0-9a-f]{8})\.(js|css)$`)
	n := 0
	for _, p := range names {
		name := filepath.Base(p)
		switch filepath.Ext(name) {
		case ".br", ".gz":
			orig := read(t, strings.TrimSuffix(p, filepath.Ext(p)))
			var r io.Reader = brotli.NewReader(bytes.NewReader(read(t, p)))
			if filepath.Ext(name) == ".gz" {
				zr, err := gzip.NewReader(bytes.NewReader(read(t, p)))
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				r = zr
			}
			if plain, err := io.ReadAll(r); err != nil || !bytes.Equal(plain, orig) {
				t.Errorf("%s does not decode to its file (err %v): regenerate it (README)", name, err)
			}
			continue
		}
		m := hashed.FindStringSubmatch(name)
		if m == nil {
			t.Errorf("%s: not a hashed name like app.0123abcd.js", name)
			continue
		}
		n++
		sum := sha256.Sum256(read(t, p))
		if got := hex.EncodeToString(sum[:4]); got != m[1] {
			t.Errorf("%s: content hash is %s: rename it (and its sidecars, and the reference in index.html)", name, got)
		}
	}
	if n == 0 {
		t.Fatal("no hashed assets")
	}
	refs := regexp.MustCompile(`(?:href|src)="/assets/([^"]+)"`).FindAllStringSubmatch(string(read(t, "public/index.html")), -1)
	if len(refs) != 2 {
		t.Errorf("index.html names %d assets, want 2 (the script and the stylesheet)", len(refs))
	}
	for _, r := range refs {
		if _, err := os.Stat(filepath.Join("public/assets", r[1])); err != nil {
			t.Errorf("index.html names a missing asset: %v", err)
		}
	}
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func do(t *testing.T, method, url string, h http.Header) (*http.Response, []byte) {
	t.Helper()
	return exampletest.Do(t, method, url, h)
}

// boot starts sluice.hcl on a free port and returns the site's base URL.
func boot(t *testing.T) string {
	t.Helper()
	addr := exampletest.FreeAddr(t)
	exampletest.Boot(t, map[string]string{"127.0.0.1:8080": addr})
	return "http://" + addr
}
