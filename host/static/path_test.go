package static

import (
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/route"
)

func TestCleanPath(t *testing.T) {
	cases := []struct {
		in, want string
		st       pathStatus
	}{
		{"/", "/", pathOK},
		{"", "/", pathOK},
		{"a/b", "/a/b", pathOK},
		{"/a/b", "/a/b", pathOK},
		{"/a/b/", "/a/b/", pathOK},
		{"//a///b//", "/a/b/", pathOK},
		{"/a/./b", "/a/b", pathOK},
		{"/a/b/.", "/a/b/", pathOK},
		{"/a/b/..", "/a/", pathOK},
		{"/a/../b", "/b", pathOK},
		{"/../../x", "/x", pathOK},
		{"/..", "/", pathOK},
		{"/a/..", "/", pathOK},
		{"/%2e%2e/x", "/x", pathOK},
		{"/%2E%2e%2fx", "", pathNotFound},
		{"/a%2fb", "", pathNotFound},
		{"/a%5cb", "", pathNotFound},
		{"/a\\b", "", pathNotFound},
		{"/a%00b", "", pathBad},
		{"/a\x00b", "", pathBad},
		{"/a%", "", pathBad},
		{"/a%4", "", pathBad},
		{"/a%g0", "", pathBad},
		{"/a%20b", "/a b", pathOK},
		{"/%25", "/%", pathOK},
		{"/a..b/c", "/a..b/c", pathOK},
		{"/...", "/...", pathOK},
		{"/.a/..b", "/.a/..b", pathOK},
		{"/é", "/é", pathOK},
		{"/%C3%A9", "/é", pathOK},
	}
	for _, c := range cases {
		var buf [8]byte // small on purpose: growth must work
		got, st := cleanPath(buf[:0], []byte(c.in))
		if st != c.st || (st == pathOK && string(got) != c.want) {
			t.Errorf("cleanPath(%q) = %q, %d; want %q, %d", c.in, got, st, c.want, c.st)
		}
	}
}

func TestHiddenSegment(t *testing.T) {
	cases := map[string]bool{
		"/": false, "/a/b": false, "/a.b": false, "/.env": true, "/a/.git/x": true, "/a/.b": true,
		"/.well-known/x": false, "/.well-known": false, "/.well-known/": false, "/.well-knownx": true,
		"/a/.well-known/x": true, "/.well-known/.x": true,
	}
	for in, want := range cases {
		if got := hiddenSegment([]byte(in)); got != want {
			t.Errorf("hiddenSegment(%q) = %v", in, got)
		}
	}
}

// FuzzCleanPath checks that a cleaned path is rooted, has no empty, "."
// or ".." segment, never names anything outside the root, agrees with
// path.Clean on the decoded input, and is a fixed point of normalize.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"/", "/a/../b", "/%2e%2e/%2e%2e/etc/passwd", "/a%2fb", "..\\..\\x", "/a/./b/", "//x//y", "/%00", "/%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		out, st := cleanPath(nil, []byte(raw))
		if st != pathOK {
			if len(out) != 0 {
				t.Fatalf("%q: refused but returned %q", raw, out)
			}
			return
		}
		s := string(out)
		if !strings.HasPrefix(s, "/") || strings.Contains(s, "//") || strings.ContainsAny(s, "\\\x00") {
			t.Fatalf("%q: cleaned to %q", raw, s)
		}
		for _, seg := range strings.Split(strings.Trim(s, "/"), "/") {
			if seg == ".." || seg == "." {
				t.Fatalf("%q: cleaned to %q with a %q segment", raw, s, seg)
			}
		}
		if rel := strings.Trim(s, "/"); rel != "" && !filepath.IsLocal(rel) {
			t.Fatalf("%q: cleaned to %q, not local", raw, s)
		}
		again := []byte(s)
		if n := route.Normalize(again); string(again[:n]) != s {
			t.Fatalf("%q: cleaned to %q, normalized again to %q", raw, s, again[:n])
		}
		if dec, err := url.PathUnescape(strings.ReplaceAll(raw, "+", "%2B")); err == nil {
			if want := path.Clean("/" + dec); strings.TrimSuffix(s, "/") != strings.TrimSuffix(want, "/") && !(s == "/" && want == "/") {
				t.Fatalf("%q: cleaned to %q, path.Clean says %q", raw, s, want)
			}
		}
	})
}

func TestHiddenTarget(t *testing.T) {
	dir := writeTree(t, map[string]string{".secret": "s", "a/b.txt": "b", ".well-known/x": "x"})
	for link, target := range map[string]string{
		"l":     ".secret",
		"ok":    "a/b.txt",
		"abs":   filepath.Join(dir, "a/b.txt"),
		"loop1": "loop2",
		"loop2": "loop1",
		"a/up":  "../.secret",
		"a/wk":  "../.well-known/x",
		"a/dot": "./b.txt",
	} {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for name, want := range map[string]bool{
		"/a/b.txt":      false,
		"/ok":           false,
		"/missing/x":    false,
		"/l":            true,
		"/a/up":         true,
		"/a/dot":        false,
		"/abs":          true, // os.Root refuses it anyway
		"/loop1":        true,
		"/.secret":      true,
		"/a/wk":         false,
		"/.well-known/": false,
		"/":             false,
	} {
		if got := hiddenTarget(root, name); got != want {
			t.Errorf("hiddenTarget(%q) = %v, want %v", name, got, want)
		}
	}
}
