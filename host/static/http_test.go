package static

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

const digitsBody = "0123456789abcdefghijklmnopqrstuvwxyz" // 36 bytes

func TestConditional(t *testing.T) {
	dir := writeTree(t, map[string]string{"f.txt": digitsBody})
	h := newHandler(t, Options{Root: dir})
	fi, err := os.Stat(filepath.Join(dir, "f.txt"))
	must(t, err)
	etag := `"` + strconv.FormatInt(fi.Size(), 16) + "-" + strconv.FormatInt(fi.ModTime().UnixNano(), 16) + `"`
	lm := fi.ModTime().UTC().Format(http.TimeFormat)
	before := fi.ModTime().Add(-time.Hour).UTC().Format(http.TimeFormat)
	after := fi.ModTime().Add(time.Hour).UTC().Format(http.TimeFormat)
	rfc850 := fi.ModTime().UTC().Format(time.RFC850)
	asctime := fi.ModTime().UTC().Format(time.ANSIC)
	notMod := map[string]string{"ETag": etag, "Last-Modified": lm, "Cache-Control": "public, max-age=3600", "Content-Type": "", "Content-Length": ""}
	full := map[string]string{"ETag": etag, "Last-Modified": lm}
	c := func(name string, hdr map[string]string, status int, want map[string]string) tc {
		var body *string
		switch status {
		case 200:
			body = str(digitsBody)
		case 304:
			body = str("")
		}
		return tc{name: name, path: "/f.txt", hdr: hdr, status: status, body: body, want: want}
	}
	m := func(kv ...string) map[string]string {
		r := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			r[kv[i]] = kv[i+1]
		}
		return r
	}
	runCases(t, h, []tc{
		c("plain", nil, 200, full),
		c("inm match", m("If-None-Match", etag), 304, notMod),
		c("inm weak match", m("If-None-Match", "W/"+etag), 304, notMod),
		c("inm list", m("If-None-Match", `"x", `+etag+`, "y"`), 304, notMod),
		c("inm star", m("If-None-Match", "*"), 304, notMod),
		c("inm mismatch", m("If-None-Match", `"nope"`), 200, full),
		c("inm malformed", m("If-None-Match", `nope`), 200, full),
		c("ims equal", m("If-Modified-Since", lm), 304, notMod),
		c("ims later", m("If-Modified-Since", after), 304, notMod),
		c("ims earlier", m("If-Modified-Since", before), 200, full),
		c("ims rfc850", m("If-Modified-Since", rfc850), 304, notMod),
		c("ims asctime", m("If-Modified-Since", asctime), 304, notMod),
		c("ims garbage", m("If-Modified-Since", "yesterday"), 200, full),
		c("inm wins over ims", m("If-None-Match", `"nope"`, "If-Modified-Since", after), 200, full),
		c("if-match ok", m("If-Match", etag), 200, full),
		c("if-match star", m("If-Match", "*"), 200, full),
		c("if-match fails", m("If-Match", `"nope"`), 412, nil),
		c("if-match weak fails", m("If-Match", "W/"+etag), 412, nil),
		c("ius ok", m("If-Unmodified-Since", lm), 200, full),
		c("ius fails", m("If-Unmodified-Since", before), 412, nil),
		c("if-match wins over ius", m("If-Match", etag, "If-Unmodified-Since", before), 200, full),
		c("if-match before inm", m("If-Match", `"nope"`, "If-None-Match", etag), 412, nil),
		c("ius then inm", m("If-Unmodified-Since", lm, "If-None-Match", etag), 304, notMod),
		{name: "head 304", method: "HEAD", path: "/f.txt", hdr: m("If-None-Match", etag), status: 304, want: m("ETag", etag)},
	})
}

func TestRanges(t *testing.T) {
	big := strings.Repeat(digitsBody, 2000) // 72000 bytes
	files := map[string]string{"f.txt": digitsBody, "big.txt": big, "empty.txt": ""}
	for _, maxFile := range []int64{0, -1} { // cached bytes, then sendfile for all
		dir := writeTree(t, files)
		h := newHandler(t, Options{Root: dir, MemCacheMaxFile: maxFile, Compress: []string{"gzip"}, CompressMinSize: -1})
		fi, _ := os.Stat(filepath.Join(dir, "f.txt"))
		etag := `"` + strconv.FormatInt(fi.Size(), 16) + "-" + strconv.FormatInt(fi.ModTime().UnixNano(), 16) + `"`
		lm := fi.ModTime().UTC().Format(http.TimeFormat)
		r := func(name, spec string, status int, body, cr string) tc {
			return tc{name: name, path: "/f.txt", hdr: map[string]string{"Range": spec}, status: status, body: str(body),
				want: map[string]string{"Content-Range": cr, "Accept-Ranges": "bytes", "Content-Encoding": "", "Vary": "Accept-Encoding"}}
		}
		cases := []tc{
			r("first", "bytes=0-0", 206, "0", "bytes 0-0/36"),
			r("single", "bytes=2-5", 206, "2345", "bytes 2-5/36"),
			r("unit case", "Bytes=2-5", 206, "2345", "bytes 2-5/36"),
			r("open", "bytes=30-", 206, "uvwxyz", "bytes 30-35/36"),
			r("suffix", "bytes=-3", 206, "xyz", "bytes 33-35/36"),
			r("suffix too long", "bytes=-100", 206, digitsBody, "bytes 0-35/36"),
			r("end past size", "bytes=34-1000", 206, "yz", "bytes 34-35/36"),
			r("huge end", "bytes=34-99999999999999999999999", 206, "yz", "bytes 34-35/36"),
			r("overlap coalesced", "bytes=0-3,2-5", 206, "012345", "bytes 0-5/36"),
			r("adjacent coalesced", "bytes=0-1,2-3", 206, "0123", "bytes 0-3/36"),
			r("unsatisfiable dropped", "bytes=2-3,100-200", 206, "23", "bytes 2-3/36"),
			r("whitespace", "bytes= 2-3 , ", 206, "23", "bytes 2-3/36"),
			r("invalid ignored", "bytes=5-2", 200, digitsBody, ""),
			r("garbage ignored", "bytes=a-b", 200, digitsBody, ""),
			r("other unit ignored", "items=0-1", 200, digitsBody, ""),
			r("empty ignored", "bytes=", 200, digitsBody, ""),
			r("too many ignored", "bytes="+strings.Repeat("0-0,", 17)+"0-0", 200, digitsBody, ""),
			{name: "unsatisfiable", path: "/f.txt", hdr: map[string]string{"Range": "bytes=36-"}, status: 416, want: map[string]string{"Content-Range": "bytes */36"}},
			{name: "suffix zero", path: "/f.txt", hdr: map[string]string{"Range": "bytes=-0"}, status: 416, want: map[string]string{"Content-Range": "bytes */36"}},
			{name: "big unsatisfiable", path: "/big.txt", hdr: map[string]string{"Range": "bytes=72000-"}, status: 416, want: map[string]string{"Content-Range": "bytes */72000"}},
			{name: "big head", method: "HEAD", path: "/big.txt", status: 200, body: str(""), want: map[string]string{"Content-Length": "72000"}},
			{name: "big whole", path: "/big.txt", status: 200, body: str(big), want: map[string]string{"Content-Length": "72000"}},
			{name: "empty file", path: "/empty.txt", hdr: map[string]string{"Range": "bytes=0-"}, status: 416, want: map[string]string{"Content-Range": "bytes */0"}},
			{name: "head ignores range", method: "HEAD", path: "/f.txt", hdr: map[string]string{"Range": "bytes=0-1"}, status: 200, want: map[string]string{"Content-Length": "36"}},
			{name: "if-range etag", path: "/f.txt", hdr: map[string]string{"Range": "bytes=0-1", "If-Range": etag}, status: 206, body: str("01")},
			{name: "if-range date", path: "/f.txt", hdr: map[string]string{"Range": "bytes=0-1", "If-Range": lm}, status: 206, body: str("01")},
			{name: "if-range stale etag", path: "/f.txt", hdr: map[string]string{"Range": "bytes=0-1", "If-Range": `"old"`}, status: 200, body: str(digitsBody)},
			{name: "if-range weak etag", path: "/f.txt", hdr: map[string]string{"Range": "bytes=0-1", "If-Range": "W/" + etag}, status: 200, body: str(digitsBody)},
			{name: "if-range old date", path: "/f.txt", hdr: map[string]string{"Range": "bytes=0-1", "If-Range": "Mon, 02 Jan 2006 15:04:05 GMT"}, status: 200, body: str(digitsBody)},
			{name: "range on encoded request is identity", path: "/f.txt", hdr: map[string]string{"Range": "bytes=0-1", "Accept-Encoding": "gzip"}, status: 206, body: str("01"),
				want: map[string]string{"Content-Encoding": ""}},
			{name: "big single", path: "/big.txt", hdr: map[string]string{"Range": "bytes=70000-70009"}, status: 206, body: str(big[70000:70010]),
				want: map[string]string{"Content-Range": "bytes 70000-70009/72000", "Content-Length": "10"}},
			{name: "big suffix", path: "/big.txt", hdr: map[string]string{"Range": "bytes=-5"}, status: 206, body: str(big[len(big)-5:])},
			{name: "multi", path: "/f.txt", hdr: map[string]string{"Range": "bytes=1-2,-2,10-12"}, status: 206,
				check: checkMultipart(digitsBody, "text/plain; charset=utf-8", [][2]int{{1, 2}, {34, 35}, {10, 12}})},
			{name: "big multi", path: "/big.txt", hdr: map[string]string{"Range": "bytes=0-9,50000-50099"}, status: 206,
				check: checkMultipart(big, "text/plain; charset=utf-8", [][2]int{{0, 9}, {50000, 50099}})},
		}
		runCases(t, h, cases)
	}
}

// checkMultipart parses a multipart/byteranges body and checks each part.
func checkMultipart(content, ctype string, parts [][2]int) func(*testing.T, *http.Response, []byte) {
	return func(t *testing.T, resp *http.Response, body []byte) {
		t.Helper()
		mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if err != nil || mt != "multipart/byteranges" {
			t.Fatalf("multipart: content type %q", resp.Header.Get("Content-Type"))
		}
		if resp.ContentLength != int64(len(body)) {
			t.Errorf("multipart: Content-Length %d, body %d", resp.ContentLength, len(body))
		}
		mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
		for i := 0; ; i++ {
			p, err := mr.NextPart()
			if err == io.EOF {
				if i != len(parts) {
					t.Errorf("multipart: %d parts, want %d", i, len(parts))
				}
				return
			}
			if err != nil {
				t.Fatalf("multipart: %v", err)
			}
			data, _ := io.ReadAll(p)
			if i >= len(parts) {
				t.Fatalf("multipart: extra part")
			}
			r := parts[i]
			if string(data) != content[r[0]:r[1]+1] {
				t.Errorf("multipart part %d: %q", i, trunc(data))
			}
			wantCR := "bytes " + strconv.Itoa(r[0]) + "-" + strconv.Itoa(r[1]) + "/" + strconv.Itoa(len(content))
			if got := p.Header.Get("Content-Range"); got != wantCR {
				t.Errorf("multipart part %d: Content-Range %q, want %q", i, got, wantCR)
			}
			if got := p.Header.Get("Content-Type"); got != ctype {
				t.Errorf("multipart part %d: Content-Type %q", i, got)
			}
		}
	}
}

func decode(t *testing.T, enc string, b []byte) string {
	t.Helper()
	var r io.Reader
	var err error
	switch enc {
	case "gzip":
		r, err = gzip.NewReader(bytes.NewReader(b))
	case "br":
		r = brotli.NewReader(bytes.NewReader(b))
	case "zstd":
		var d *zstd.Decoder
		d, err = zstd.NewReader(bytes.NewReader(b))
		if d != nil {
			defer d.Close()
		}
		r = d
	case "":
		return string(b)
	default:
		t.Fatalf("unknown encoding %q", enc)
	}
	if err != nil {
		t.Fatalf("%s: %v", enc, err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: %v", enc, err)
	}
	return string(out)
}

func TestPrecompressed(t *testing.T) {
	js := strings.Repeat("function x(){return 1}\n", 10)
	files := map[string]string{
		"app.js": js, "app.js.br": "BR", "app.js.gz": "GZ", "app.js.zst": "ZST",
		"only-gz.css": "body{}", "only-gz.css.gz": "GZCSS",
		"plain.txt": "plain",
	}
	dir := writeTree(t, files)
	h := newHandler(t, Options{Root: dir, Precompressed: []string{"br", "zstd", "gzip"}})
	fi, _ := os.Stat(filepath.Join(dir, "app.js"))
	base := strconv.FormatInt(fi.Size(), 16) + "-" + strconv.FormatInt(fi.ModTime().UnixNano(), 16)
	sc := func(ext string) string {
		fi, _ := os.Stat(filepath.Join(dir, "app.js"+ext))
		return strconv.FormatInt(fi.Size(), 16) + "-" + strconv.FormatInt(fi.ModTime().UnixNano(), 16)
	}
	ae := func(name, accept string, body, enc, etag string) tc {
		hdr := map[string]string{}
		if accept != "-" {
			hdr["Accept-Encoding"] = accept
		}
		return tc{name: name, path: "/app.js", hdr: hdr, status: 200, body: str(body),
			want: map[string]string{"Content-Encoding": enc, "Vary": "Accept-Encoding", "Content-Type": "text/javascript; charset=utf-8", "ETag": etag, "Content-Length": strconv.Itoa(len(body))}}
	}
	brTag, zTag, gzTag, idTag := `"`+sc(".br")+`-br"`, `"`+sc(".zst")+`-zstd"`, `"`+sc(".gz")+`-gzip"`, `"`+base+`"`
	runCases(t, h, []tc{
		ae("none", "-", js, "", idTag),
		ae("all", "gzip, deflate, br, zstd", "BR", "br", brTag),
		ae("gzip only", "gzip", "GZ", "gzip", gzTag),
		ae("x-gzip", "x-gzip", "GZ", "gzip", gzTag),
		ae("case", "GZIP", "GZ", "gzip", gzTag),
		ae("q prefers zstd", "br;q=0.5, zstd;q=0.9, gzip;q=0.1", "ZST", "zstd", zTag),
		ae("q=0 excludes", "br;q=0, gzip", "GZ", "gzip", gzTag),
		ae("star", "*", "BR", "br", brTag),
		ae("star minus br", "*, br;q=0", "ZST", "zstd", zTag),
		ae("identity preferred", "gzip;q=0.5, identity", js, "", idTag),
		ae("identity only", "identity", js, "", idTag),
		ae("unknown", "deflate, compress", js, "", idTag),
		ae("all excluded", "*;q=0", js, "", idTag),
		ae("malformed q ignored", "br;q=abc, gzip", "GZ", "gzip", gzTag),
		{name: "304 per encoding", path: "/app.js", hdr: map[string]string{"Accept-Encoding": "br", "If-None-Match": brTag}, status: 304,
			want: map[string]string{"ETag": brTag, "Vary": "Accept-Encoding"}},
		{name: "other encoding's etag", path: "/app.js", hdr: map[string]string{"Accept-Encoding": "gzip", "If-None-Match": brTag}, status: 200, body: str("GZ")},
		{name: "head", method: "HEAD", path: "/app.js", hdr: map[string]string{"Accept-Encoding": "br"}, status: 200, body: str(""),
			want: map[string]string{"Content-Encoding": "br", "Content-Length": "2"}},
		{name: "only some sidecars", path: "/only-gz.css", hdr: map[string]string{"Accept-Encoding": "br, gzip"}, status: 200, body: str("GZCSS"),
			want: map[string]string{"Content-Encoding": "gzip", "Content-Type": "text/css; charset=utf-8"}},
		{name: "no sidecar no vary", path: "/plain.txt", hdr: map[string]string{"Accept-Encoding": "br"}, status: 200, body: str("plain"),
			want: map[string]string{"Content-Encoding": "", "Vary": ""}},
		{name: "sidecar itself", path: "/app.js.gz", status: 200, body: str("GZ"), want: map[string]string{"Content-Type": "application/gzip", "Content-Encoding": ""}},
	})
}

func TestCompress(t *testing.T) {
	text := strings.Repeat("hello compressible world. ", 200) // 5200 bytes
	big := strings.Repeat("a big compressible file line\n", 20000)
	files := map[string]string{"t.txt": text, "small.txt": "tiny", "img.png": text, "big.css": big, "page.html": text, "rand.txt": randomText(4000)}
	for _, maxFile := range []int64{0, 1 << 10} { // cached variants, then streamed
		h := newHandler(t, Options{Root: writeTree(t, files), Compress: []string{"zstd", "br", "gzip"}, MemCacheMaxFile: maxFile})
		enc := func(name, p, accept, want, content string) tc {
			return tc{name: name, path: p, hdr: map[string]string{"Accept-Encoding": accept}, status: 200,
				want: map[string]string{"Content-Encoding": want, "Vary": "Accept-Encoding"},
				check: func(t *testing.T, resp *http.Response, body []byte) {
					if got := decode(t, want, body); got != content {
						t.Errorf("%s: decoded body %q", p, trunc([]byte(got)))
					}
					if want != "" && len(body) >= len(content) {
						t.Errorf("%s: %s body not smaller: %d", p, want, len(body))
					}
				}}
		}
		runCases(t, h, []tc{
			enc("zstd first", "/t.txt", "gzip, br, zstd", "zstd", text),
			enc("br", "/t.txt", "gzip, br", "br", text),
			enc("gzip", "/t.txt", "gzip", "gzip", text),
			enc("html", "/page.html", "gzip", "gzip", text),
			enc("big gzip", "/big.css", "gzip", "gzip", big),
			enc("big br", "/big.css", "br", "br", big),
			enc("big zstd", "/big.css", "zstd", "zstd", big),
			{name: "head big", method: "HEAD", path: "/big.css", hdr: map[string]string{"Accept-Encoding": "gzip"}, status: 200, body: str(""),
				want: map[string]string{"Content-Encoding": "gzip", "Vary": "Accept-Encoding"}},
			{name: "big identity", path: "/big.css", status: 200, body: str(big), want: map[string]string{"Content-Encoding": "", "Vary": "Accept-Encoding"}},
			{name: "too small", path: "/small.txt", hdr: map[string]string{"Accept-Encoding": "gzip"}, status: 200, body: str("tiny"),
				want: map[string]string{"Content-Encoding": "", "Vary": ""}},
			{name: "not a compressible type", path: "/img.png", hdr: map[string]string{"Accept-Encoding": "gzip"}, status: 200, body: str(text),
				want: map[string]string{"Content-Encoding": ""}},
			{name: "etag per encoding", path: "/t.txt", hdr: map[string]string{"Accept-Encoding": "gzip"}, status: 200,
				check: func(t *testing.T, resp *http.Response, _ []byte) {
					if et := resp.Header.Get("ETag"); !strings.HasSuffix(et, `-gzip"`) {
						t.Errorf("etag %q", et)
					}
				}},
		})
	}
	// Incompressible content is sent as identity, still with Vary.
	h := newHandler(t, Options{Root: writeTree(t, files), Compress: []string{"gzip"}})
	runCases(t, h, []tc{{name: "no gain", path: "/rand.txt", hdr: map[string]string{"Accept-Encoding": "gzip"}, status: 200,
		want: map[string]string{"Content-Encoding": "", "Vary": "Accept-Encoding", "Content-Length": "4000"}}})
}

func randomText(n int) string {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return string(b)
}

func TestBrowse(t *testing.T) {
	files := map[string]string{
		"pub/b.txt": "bb", "pub/a.txt": strings.Repeat("a", 3000), "pub/c<x>&\"y\".txt": "c", "pub/sub/": "",
		"pub/.secret": "s", "pub/q?.txt": "q", "pub/d:e.txt": "d",
	}
	dir := writeTree(t, files)
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	must(t, os.Chtimes(filepath.Join(dir, "pub/b.txt"), old, old))
	h := newHandler(t, Options{Root: dir, Browse: true})
	names := func(body []byte) []string {
		var items []listItem
		if err := json.Unmarshal(body, &items); err != nil {
			t.Fatalf("json: %v: %s", err, body)
		}
		var n []string
		for _, it := range items {
			n = append(n, it.Name)
		}
		return n
	}
	order := func(q string, want ...string) tc {
		return tc{name: "json " + q, path: "/pub/?" + q, hdr: map[string]string{"Accept": "application/json"}, status: 200,
			want: map[string]string{"Content-Type": "application/json; charset=utf-8"},
			check: func(t *testing.T, _ *http.Response, body []byte) {
				if got := strings.Join(names(body), ","); got != strings.Join(want, ",") {
					t.Errorf("%s: order %s, want %s", q, got, strings.Join(want, ","))
				}
			}}
	}
	all := []string{"sub", "a.txt", "b.txt", `c<x>&"y".txt`, "d:e.txt", "q?.txt"}
	runCases(t, h, []tc{
		{name: "html", path: "/pub/", status: 200, want: map[string]string{"Content-Type": "text/html; charset=utf-8"},
			check: func(t *testing.T, _ *http.Response, body []byte) {
				s := string(body)
				for _, want := range []string{
					`<a href="./c%3Cx%3E&amp;%22y%22.txt">c&lt;x&gt;&amp;&#34;y&#34;.txt</a>`,
					`<a href="./q%3F.txt">`, `<a href="./d:e.txt">`, `<a href="./sub/">sub/</a>`,
					`2.9 KiB`, `2020-01-02 03:04:05`, `<a href="../">`,
					`href="?sort=size&amp;order=asc"`, `href="?sort=name&amp;order=desc"`,
				} {
					if !strings.Contains(s, want) {
						t.Errorf("listing lacks %q", want)
					}
				}
				if strings.Contains(s, ".secret") || strings.Contains(s, "<x>") {
					t.Errorf("listing shows a dotfile or an unescaped name")
				}
			}},
		{name: "redirect", path: "/pub", status: 301, want: map[string]string{"Location": "/pub/"}},
		{name: "head", method: "HEAD", path: "/pub/", status: 200, body: str("")},
		order("", all...),
		order("sort=name&order=desc", "sub", "q?.txt", "d:e.txt", `c<x>&"y".txt`, "b.txt", "a.txt"),
		order("sort=size&order=desc", "sub", "a.txt", "b.txt", "q?.txt", "d:e.txt", `c<x>&"y".txt`),
		order("sort=time&order=asc", "sub", "b.txt", "a.txt", `c<x>&"y".txt`, "d:e.txt", "q?.txt"),
		{name: "format param", path: "/pub/?format=json", status: 200, want: map[string]string{"Content-Type": "application/json; charset=utf-8"},
			check: func(t *testing.T, _ *http.Response, body []byte) {
				var items []map[string]any
				must(t, json.Unmarshal(body, &items))
				if len(items) != len(all) || items[0]["is_dir"] != true || items[1]["size"] != float64(3000) || items[1]["mod_time"] == nil {
					t.Errorf("json items: %v", items)
				}
			}},
		{name: "dotfile dir not listed", path: "/.git/", status: 404},
	})
}
