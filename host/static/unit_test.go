package static

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestAcceptEncoding(t *testing.T) {
	order := []int8{encBr, encZstd, encGzip}
	cases := map[string]int{ // header → chosen coding, -1 identity
		"":                              -1,
		"gzip":                          encGzip,
		"gzip, br":                      encBr,
		"gzip;q=1.0, br;q=0.999":        encGzip,
		"br;q=0":                        -1,
		"*":                             encBr,
		"*;q=0":                         -1,
		"*;q=0.5, identity":             -1,
		"identity;q=0, gzip;q=0.1":      encGzip,
		"gzip;q=0.5, identity;q=0.5":    encGzip,
		"gzip;q=0.4, identity;q=0.5":    -1,
		"zstd;q=2":                      -1, // invalid q: element ignored
		"ZSTD;Q=0.5":                    encZstd,
		" gzip ; q=0.3 , zstd ; q=0.2 ": encGzip,
		"x-gzip":                        encGzip,
		"deflate":                       -1,
		"br;foo=bar;q=0.1, zstd;q=0.05": encBr,
		"gzip;q=0.":                     -1,
		"gzip;q=1.":                     encGzip,
		"gzip;q=1.001":                  -1,
	}
	for h, want := range cases {
		a := parseAcceptEncoding([]byte(h))
		got := -1
		if i := a.choose(order); i >= 0 {
			got = int(order[i])
		}
		if got != want {
			t.Errorf("Accept-Encoding %q: chose %d, want %d", h, got, want)
		}
	}
}

func TestHashedName(t *testing.T) {
	cases := map[string]bool{
		"app.3f9a1c2b.js": true, "main-BxY12abc.css": true, "index-DiwrgTda.js": true, "chunk.0a1b2c3d4e5f.js": true,
		"vendor_a1b2c3d4.js": true, "bootstrap.min.js": false, "jquery-3.7.1.js": false, "report-20240101.pdf": false,
		"3f9a1c2b.js": false, "style.css": false, "react-dom.production.min.js": false, "app.abc123.js": false,
	}
	for name, want := range cases {
		if got := hashedName(name); got != want {
			t.Errorf("hashedName(%q) = %v", name, got)
		}
	}
}

func TestETagMatch(t *testing.T) {
	etag := []byte(`"a-b"`)
	cases := []struct {
		list       string
		weak, want bool
	}{
		{`"a-b"`, false, true},
		{`W/"a-b"`, false, false},
		{`W/"a-b"`, true, true},
		{`"x", "a-b"`, false, true},
		{`"x","y"`, true, false},
		{`*`, false, true},
		{`"a,b", "a-b"`, true, true},
		{`a-b`, true, false},
		{`"a-b`, true, false},
		{``, true, false},
	}
	for _, c := range cases {
		if got := etagListMatch([]byte(c.list), etag, c.weak); got != c.want {
			t.Errorf("etagListMatch(%q, weak=%v) = %v", c.list, c.weak, got)
		}
	}
}

func TestParseHTTPDate(t *testing.T) {
	want := time.Date(1994, 11, 6, 8, 49, 37, 0, time.UTC).Unix()
	for _, s := range []string{"Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"} {
		if got, ok := parseHTTPDate([]byte(s), nil); !ok || got != want {
			t.Errorf("parseHTTPDate(%q) = %d, %v", s, got, ok)
		}
	}
	for _, s := range []string{"", "yesterday", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Xyz 1994 08:49:37 GMT", "Sun, 36 Nov 1994 08:49:37 GMT"} {
		if _, ok := parseHTTPDate([]byte(s), nil); ok {
			t.Errorf("parseHTTPDate(%q) accepted", s)
		}
	}
}

func TestHumanSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 3000: "2.9 KiB", 5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := humanSize(n); got != want {
			t.Errorf("humanSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCacheEviction(t *testing.T) {
	c := newCache(3, 100, new(atomic.Uint64))
	mk := func(k string, n int) *entry {
		e := &entry{key: k}
		e.mem.Store(int64(n))
		return e
	}
	for _, k := range []string{"/a", "/b", "/c", "/d"} {
		c.put(mk(k, 10))
	}
	if c.len() != 3 {
		t.Errorf("entries %d, want 3", c.len())
	}
	c.put(mk("/big", 95))
	if c.bytes.Load() > 100 || c.get([]byte("/big")) == nil {
		t.Errorf("bytes %d, big cached %v", c.bytes.Load(), c.get([]byte("/big")) != nil)
	}
	e := c.get([]byte("/big"))
	c.remove(e)
	if c.get([]byte("/big")) != nil || c.bytes.Load() < 0 {
		t.Errorf("remove failed")
	}
}
