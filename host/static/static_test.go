package static

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var site = map[string]string{
	"index.html":               "<h1>home</h1>",
	"about/index.html":         "<h1>about</h1>",
	"empty/":                   "",
	"style.css":                "body{}",
	"app.3f9a1c2b.js":          "console.log(1)",
	"index-DiwrgTda.js":        "x",
	"logo.svg":                 "<svg/>",
	"data.json":                `{"a":1}`,
	"blob.unknownext":          "??",
	"img.PNG":                  "png",
	"font.woff2":               "w",
	".env":                     "SECRET=1",
	".git/config":              "[core]",
	"sub/.hidden":              "h",
	".well-known/security.txt": "Contact: x",
	"a b/c&d<e>.txt":           "spaced",
	"%2e%2e.txt":               "literal percent name",
	"page.html":                "<p>page</p>",
	"report-20240101.pdf":      "%PDF",
	"dir.with.dots/index.html": "dots",
}

func TestMethods(t *testing.T) {
	h := newHandler(t, Options{Root: writeTree(t, site)})
	runCases(t, h, []tc{
		{name: "get", path: "/style.css", status: 200, body: str("body{}"), want: map[string]string{"Content-Length": "6"}},
		{name: "head", method: "HEAD", path: "/style.css", status: 200, body: str(""),
			want: map[string]string{"Content-Length": "6", "Content-Type": "text/css; charset=utf-8", "Accept-Ranges": "bytes"}},
		{name: "post", method: "POST", path: "/style.css", status: 405, want: map[string]string{"Allow": "GET, HEAD"}},
		{name: "delete", method: "DELETE", path: "/style.css", status: 405, want: map[string]string{"Allow": "GET, HEAD"}},
		{name: "put", method: "PUT", path: "/nope", status: 405, want: map[string]string{"Allow": "GET, HEAD"}},
		{name: "options", method: "OPTIONS", path: "/style.css", status: 204, body: str(""), want: map[string]string{"Allow": "GET, HEAD"}},
	})
}

func TestPaths(t *testing.T) {
	dir := writeTree(t, site)
	outside := writeTree(t, map[string]string{"secret.txt": "top secret"})
	must(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "escape.txt")))
	must(t, os.Symlink(outside, filepath.Join(dir, "escapedir")))
	must(t, os.Symlink("style.css", filepath.Join(dir, "inside.css")))
	must(t, os.Symlink("about", filepath.Join(dir, "aboutlink")))
	h := newHandler(t, Options{Root: dir})
	notFound := func(name, p string) tc { return tc{name: name, path: p, status: 404} }
	runCases(t, h, []tc{
		{name: "plain", path: "/style.css", status: 200, body: str("body{}")},
		{name: "dot-dot resolved inside", path: "/about/../style.css", status: 200, body: str("body{}")},
		{name: "dot segments", path: "/./about/./index.html", status: 200, body: str("<h1>about</h1>")},
		{name: "dot-dot above root clamps", path: "/../../style.css", status: 200, body: str("body{}")},
		{name: "encoded dot-dot", path: "/%2e%2e/%2E%2E/style.css", status: 200, body: str("body{}")},
		{name: "double slash", path: "/about//index.html", status: 200, body: str("<h1>about</h1>")},
		{name: "percent-encoded name", path: "/a%20b/c%26d%3Ce%3E.txt", status: 200, body: str("spaced")},
		{name: "decoded once", path: "/%252e%252e.txt", status: 200, body: str("literal percent name")},
		notFound("dot-dot to outside file", "/../"+filepath.Base(outside)+"/secret.txt"),
		notFound("encoded slash", "/about%2findex.html"),
		notFound("encoded slash upper", "/about%2Findex.html"),
		notFound("encoded backslash", "/about%5cindex.html"),
		notFound("encoded dot-dot backslash", "/..%5c..%5cetc/passwd"),
		{name: "encoded NUL", path: "/style.css%00.png", status: 400},
		{name: "bad escape", path: "/style%zz.css", status: 400, skip: "std-h2c,h2,h3"}, // reset by the HTTP/2 and HTTP/3 engines (as x/net/http2)
		{name: "truncated escape", path: "/style.css%2", status: 400, skip: "std-h2c,h2,h3"},
		notFound("symlink leaving root", "/escape.txt"),
		notFound("symlinked dir leaving root", "/escapedir/secret.txt"),
		{name: "symlink inside root", path: "/inside.css", status: 200, body: str("body{}")},
		{name: "symlinked dir inside root", path: "/aboutlink/", status: 200, body: str("<h1>about</h1>")},
		notFound("dotfile", "/.env"),
		notFound("dot dir", "/.git/config"),
		notFound("nested dotfile", "/sub/.hidden"),
		notFound("encoded dotfile", "/%2eenv"),
		{name: "well-known allowed", path: "/.well-known/security.txt", status: 200, body: str("Contact: x")},
		notFound("missing", "/nope.txt"),
		notFound("file with slash", "/style.css/"),
		notFound("file below file", "/style.css/x"),
	})
}

// TestDotfileSymlinks: the dotfile rule holds for what a symlink inside
// the root points at, every component of it: a link to a dotfile, a link
// to a dot directory, a chain of links through one, an index file or a
// precompressed sidecar that is such a link. Links to ordinary files
// and to .well-known still serve, and with dotfiles = true all do.
func TestDotfileSymlinks(t *testing.T) {
	tree := func(t *testing.T) string {
		dir := writeTree(t, map[string]string{
			".secret":                  "top secret",
			".git/config":              "[core]",
			".env.gz":                  "gzipped secret",
			"style.css":                "body{}",
			"app.js":                   "plain js",
			"sub/x.txt":                "x",
			".well-known/security.txt": "Contact: x",
			"idx/":                     "",
		})
		for link, target := range map[string]string{
			"link":           ".secret",
			"d":              ".git",
			"sub/up":         "../.secret",
			"chain":          "sub/chained",
			"sub/chained":    "../d/config",
			"idx/index.html": "../.secret",
			"app.js.gz":      ".env.gz",
			"ok.css":         "style.css",
			"subdir":         "sub",
			"wk":             ".well-known/security.txt",
		} {
			must(t, os.Symlink(target, filepath.Join(dir, filepath.FromSlash(link))))
		}
		return dir
	}
	notFound := func(name, p string) tc { return tc{name: name, path: p, status: 404} }
	h := newHandler(t, Options{Root: tree(t), Browse: true, Precompressed: []string{"gzip"}})
	runCases(t, h, []tc{
		notFound("link to a dotfile", "/link"),
		notFound("link to a dot dir", "/d/config"),
		notFound("link to a dot dir, listing", "/d/"),
		notFound("link with dot-dot to a dotfile", "/sub/up"),
		notFound("chain through a dot dir", "/chain"),
		{name: "index file linking to a dotfile", path: "/idx/", status: 200, // the listing
			check: func(t *testing.T, _ *http.Response, body []byte) {
				if strings.Contains(string(body), "top secret") || strings.Contains(string(body), "index.html") {
					t.Errorf("serves or lists the index that links to a dotfile: %s", body)
				}
			}},
		{name: "sidecar linking to a dotfile", path: "/app.js", hdr: map[string]string{"Accept-Encoding": "gzip"},
			status: 200, body: str("plain js")},
		{name: "link to a file", path: "/ok.css", status: 200, body: str("body{}")},
		{name: "link to a dir", path: "/subdir/x.txt", status: 200, body: str("x")},
		{name: "link into .well-known", path: "/wk", status: 200, body: str("Contact: x")},
		{name: "listing leaves links to dotfiles out", path: "/?format=json", status: 200,
			check: func(t *testing.T, _ *http.Response, body []byte) {
				for _, n := range []string{`"link"`, `"d"`, `"chain"`} {
					if strings.Contains(string(body), n) {
						t.Errorf("listing shows %s: %s", n, body)
					}
				}
				if !strings.Contains(string(body), `"ok.css"`) {
					t.Errorf("listing lacks ok.css: %s", body)
				}
			}},
	})
	h = newHandler(t, Options{Root: tree(t)})
	runCases(t, h, []tc{
		notFound("index file linking to a dotfile, no listing", "/idx/"),
	})
	h = newHandler(t, Options{Root: tree(t), Dotfiles: true})
	runCases(t, h, []tc{
		{name: "dotfiles on: link to a dotfile", path: "/link", status: 200, body: str("top secret")},
		{name: "dotfiles on: link to a dot dir", path: "/d/config", status: 200, body: str("[core]")},
	})
}

func TestDotfilesEnabled(t *testing.T) {
	h := newHandler(t, Options{Root: writeTree(t, site), Dotfiles: true})
	runCases(t, h, []tc{
		{name: "dotfile", path: "/.env", status: 200, body: str("SECRET=1")},
		{name: "dot dir", path: "/.git/config", status: 200, body: str("[core]")},
	})
}

func TestIndexAndRedirect(t *testing.T) {
	h := newHandler(t, Options{Root: writeTree(t, site)})
	runCases(t, h, []tc{
		{name: "root index", path: "/", status: 200, body: str("<h1>home</h1>"), want: map[string]string{"Content-Type": "text/html; charset=utf-8"}},
		{name: "sub index", path: "/about/", status: 200, body: str("<h1>about</h1>")},
		{name: "index by name", path: "/about/index.html", status: 200, body: str("<h1>about</h1>")},
		{name: "redirect", path: "/about", status: 301, want: map[string]string{"Location": "/about/"}},
		{name: "redirect keeps query", path: "/about?x=1&y=2", status: 301, want: map[string]string{"Location": "/about/?x=1&y=2"}},
		{name: "redirect cleaned", path: "/.//evil.com/../../about", status: 301, want: map[string]string{"Location": "/about/"}},
		{name: "redirect escaped", path: "/a%20b", status: 301, want: map[string]string{"Location": "/a%20b/"}},
		{name: "redirect dots", path: "/dir.with.dots", status: 301, want: map[string]string{"Location": "/dir.with.dots/"}},
		{name: "no index no browse", path: "/empty/", status: 404},
		{name: "no index redirect first", path: "/empty", status: 301, want: map[string]string{"Location": "/empty/"}},
	})
}

func TestIndexList(t *testing.T) {
	files := map[string]string{"a/default.htm": "htm", "b/index.html": "html", "b/default.htm": "htm"}
	h := newHandler(t, Options{Root: writeTree(t, files), Index: []string{"index.html", "default.htm"}})
	runCases(t, h, []tc{
		{name: "second index", path: "/a/", status: 200, body: str("htm")},
		{name: "first index wins", path: "/b/", status: 200, body: str("html")},
	})
}

func TestStripPrefix(t *testing.T) {
	h := newHandler(t, Options{Root: writeTree(t, site), StripPrefix: "/assets/"})
	runCases(t, h, []tc{
		{name: "stripped", path: "/assets/style.css", status: 200, body: str("body{}")},
		{name: "index", path: "/assets/", status: 200, body: str("<h1>home</h1>")},
		{name: "prefix without slash", path: "/assets", status: 301, want: map[string]string{"Location": "/assets/"}},
		{name: "dir redirect keeps prefix", path: "/assets/about", status: 301, want: map[string]string{"Location": "/assets/about/"}},
		{name: "outside prefix", path: "/style.css", status: 404},
		{name: "prefix lookalike", path: "/assetsx/style.css", status: 404},
		{name: "dot-dot stays in root", path: "/assets/../assets/style.css", status: 404},
	})
}

func TestMIMEAndCacheControl(t *testing.T) {
	h := newHandler(t, Options{Root: writeTree(t, site), MIMETypes: map[string]string{".unknownext": "application/x-custom", ".PNG": "image/x-test"}})
	ct := func(name, p, want, cc string) tc {
		return tc{name: name, path: p, status: 200, want: map[string]string{"Content-Type": want, "Cache-Control": cc, "X-Content-Type-Options": "nosniff"}}
	}
	runCases(t, h, []tc{
		ct("html", "/page.html", "text/html; charset=utf-8", "no-cache"),
		ct("css", "/style.css", "text/css; charset=utf-8", "public, max-age=3600"),
		ct("hashed hex js", "/app.3f9a1c2b.js", "text/javascript; charset=utf-8", "public, max-age=31536000, immutable"),
		ct("hashed vite js", "/index-DiwrgTda.js", "text/javascript; charset=utf-8", "public, max-age=31536000, immutable"),
		ct("svg", "/logo.svg", "image/svg+xml", "public, max-age=3600"),
		ct("json", "/data.json", "application/json; charset=utf-8", "public, max-age=3600"),
		ct("override", "/blob.unknownext", "application/x-custom", "public, max-age=3600"),
		ct("override case-insensitive", "/img.PNG", "image/x-test", "public, max-age=3600"),
		ct("font", "/font.woff2", "font/woff2", "public, max-age=3600"),
		ct("date is no hash", "/report-20240101.pdf", "application/pdf", "public, max-age=3600"),
	})
	h2 := newHandler(t, Options{Root: writeTree(t, site), CacheControl: CacheControl{
		Default: "max-age=60", Types: map[string]string{"text/css": "max-age=5", "image/*": "max-age=7"}}})
	runCases(t, h2, []tc{
		ct("by type", "/style.css", "text/css; charset=utf-8", "max-age=5"),
		ct("by wildcard", "/logo.svg", "image/svg+xml", "max-age=7"),
		ct("default", "/data.json", "application/json; charset=utf-8", "max-age=60"),
		ct("html default kept", "/page.html", "text/html; charset=utf-8", "no-cache"),
	})
	h3 := newHandler(t, Options{Root: writeTree(t, site), CacheControl: CacheControl{Off: true}})
	runCases(t, h3, []tc{ct("off", "/style.css", "text/css; charset=utf-8", "")})
	unknown := newHandler(t, Options{Root: writeTree(t, site)})
	runCases(t, unknown, []tc{ct("unknown", "/blob.unknownext", "application/octet-stream", "public, max-age=3600")})
}

func TestHeadersOption(t *testing.T) {
	h := newHandler(t, Options{Root: writeTree(t, site), Headers: map[string]string{"x-frame-options": "DENY", "Strict-Transport-Security": "max-age=1"}})
	runCases(t, h, []tc{
		{name: "file", path: "/style.css", status: 200, want: map[string]string{"X-Frame-Options": "DENY", "Strict-Transport-Security": "max-age=1"}},
		{name: "404", path: "/nope", status: 404, want: map[string]string{"X-Frame-Options": "DENY"}},
		{name: "304", path: "/style.css", hdr: map[string]string{"If-Modified-Since": time.Now().UTC().Format(http.TimeFormat)}, status: 304,
			want: map[string]string{"X-Frame-Options": "DENY"}},
	})
}

func TestFallback(t *testing.T) {
	h := newHandler(t, Options{Root: writeTree(t, site), Fallback: "/index.html"})
	runCases(t, h, []tc{
		{name: "route", path: "/dashboard/settings", status: 200, body: str("<h1>home</h1>"), want: map[string]string{"Content-Type": "text/html; charset=utf-8"}},
		{name: "missing asset too", path: "/missing.js", status: 200, body: str("<h1>home</h1>")},
		{name: "existing file", path: "/style.css", status: 200, body: str("body{}")},
		{name: "dir without index", path: "/empty/", status: 200, body: str("<h1>home</h1>")},
		{name: "head", method: "HEAD", path: "/x/y", status: 200, body: str(""), want: map[string]string{"Content-Length": "13"}},
		{name: "not for dotfiles", path: "/.env", status: 404},
		{name: "not for missing dotfiles", path: "/.nope", status: 404},
		{name: "not for bad paths", path: "/a%2fb", status: 404},
	})
	bad := newHandler(t, Options{Root: writeTree(t, site), Fallback: "/nope.html"})
	runCases(t, bad, []tc{{name: "fallback missing", path: "/x", status: 404}})
}

func TestErrorPages(t *testing.T) {
	files := map[string]string{"404.html": "<h1>gone</h1>", "index.html": "home", "big.txt": strings.Repeat("x", 100)}
	h := newHandler(t, Options{Root: writeTree(t, files), ErrorPages: map[int]string{404: "/404.html", 416: "/missing.html"}})
	runCases(t, h, []tc{
		{name: "404 page", path: "/nope", status: 404, body: str("<h1>gone</h1>"), want: map[string]string{"Content-Type": "text/html; charset=utf-8", "ETag": ""}},
		{name: "404 page head", method: "HEAD", path: "/nope", status: 404, body: str(""), want: map[string]string{"Content-Length": "13"}},
		{name: "dotfile 404 page", path: "/.x", status: 404, body: str("<h1>gone</h1>")},
		{name: "missing page falls back to error", path: "/big.txt", hdr: map[string]string{"Range": "bytes=500-"}, status: 416, body: str("requested range not satisfiable\n")},
		{name: "405 has no page", method: "POST", path: "/", status: 405},
	})
}

func TestNewErrors(t *testing.T) {
	dir := writeTree(t, site)
	file := filepath.Join(dir, "style.css")
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"no root", Options{}, "static: root is required"},
		{"missing root", Options{Root: filepath.Join(dir, "nope")}, `static: root "` + filepath.Join(dir, "nope") + `": `},
		{"root is file", Options{Root: file}, `static: root "` + file + `": `},
		{"bad encoding", Options{Root: dir, Compress: []string{"deflate"}}, `compress: unknown encoding "deflate"`},
		{"repeated encoding", Options{Root: dir, Precompressed: []string{"br", "br"}}, `precompressed: encoding "br" listed twice`},
		{"bad fallback", Options{Root: dir, Fallback: "index.html"}, `fallback: path "index.html" must start with '/'`},
		{"bad error status", Options{Root: dir, ErrorPages: map[int]string{200: "/x"}}, "error page for 200"},
		{"bad mime", Options{Root: dir, MIMETypes: map[string]string{"js": "x/y"}}, `mime type for "js"`},
		{"bad header", Options{Root: dir, Headers: map[string]string{"a b": "x"}}, `header "a b"`},
		{"bad index", Options{Root: dir, Index: []string{"a/b"}}, `index "a/b"`},
		{"bad prefix", Options{Root: dir, StripPrefix: "assets"}, `strip_prefix "assets"`},
	}
	for _, c := range cases {
		h, err := New(c.opts)
		if err == nil {
			h.Close()
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "static: ") {
			t.Errorf("%s: error %q, want it to contain %q", c.name, err, c.want)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
