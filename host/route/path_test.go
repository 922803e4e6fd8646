package route

import (
	"bytes"
	"net/url"
	"path"
	"strings"
	"testing"
)

func TestCanonical(t *testing.T) {
	const bad = "\x00bad" // want ErrBadPath
	cases := []struct{ raw, want string }{
		// Already canonical: returned as is.
		{"/", "/"},
		{"/a/b", "/a/b"},
		{"/a/b/", "/a/b/"},
		{"/.well-known/x", "/.well-known/x"},
		{"/a/...", "/a/..."},
		{"/a/.b/..c", "/a/.b/..c"},
		{"/a;b=c/d:e@f!$&'()*+,=~_-", "/a;b=c/d:e@f!$&'()*+,=~_-"},
		{"/a|b^c[d]", "/a|b^c[d]"},
		// The target must be a path.
		{"", bad},
		{"*", bad},
		{"a/b", bad},
		{"%2fa", bad},
		// Malformed escapes.
		{"/%", bad},
		{"/%2", bad},
		{"/a%2", bad},
		{"/%zz", bad},
		{"/%g0", bad},
		{"/%0g", bad},
		{"/api/%2e%2e/papi/%zz/../secret.txt", bad},
		// '#', NUL, controls, space and what RFC 3986 forbids.
		{"/papi/secret.txt#/../../api/x", bad},
		{"/#", bad},
		{"/a\x00b", bad},
		{"/a%00b", bad},
		{"/a\tb", bad},
		{"/a\nb", bad},
		{"/a\rb", bad},
		{"/a b", bad},
		{"/a\x7fb", bad},
		{"/a\"b", bad},
		{"/a<b>", bad},
		{"/a`b", bad},
		{"/a{b}", bad},
		{"/a?b", bad},
		{"/caf\xc3\xa9", bad},
		{"/\xff", bad},
		// Overlong UTF-8 and lead bytes no UTF-8 has.
		{"/a/%c0%af../b", bad},
		{"/%c0%ae%c0%ae/x", bad},
		{"/%c1%9c", bad},
		{"/%e0%80%af", bad},
		{"/%e0%80%ae%e0%80%ae/x", bad},
		{"/%f0%80%80%af", bad},
		{"/%f8%80%80%80%af", bad},
		{"/%ff", bad},
		// Dot segments with a ";" parameter (Tomcat reads "..;" as "..").
		{"/api/..;/papi/secret", bad},
		{"/api/.;x/y", bad},
		{"/api/%2e%2e;/papi", bad},
		{"/api/..;", bad},
		// Valid UTF-8 is decoded; the escapes that must stay come back
		// with AppendEscaped.
		{"/caf%C3%A9", "/caf\xc3\xa9"},
		{"/%e0%a0%80", "/\xe0\xa0\x80"},
		{"/%f0%90%80%80", "/\xf0\x90\x80\x80"},
		{"/a%20b", "/a b"},
		{"/a%25b", "/a%b"},
		{"/a%3fb%23c", "/a?b#c"},
		{"/a%0ab", "/a\nb"},
		{"/%61%62", "/ab"},
		{"/a;..b", "/a;..b"},
		// Decoded once.
		{"/%252e%252e/x", "/%2e%2e/x"},
		{"/%2525", "/%25"},
		// Separators: '/', '\\', "%2F", "%5C".
		{"/a%2fb", "/a/b"},
		{"/a%2Fb", "/a/b"},
		{"/a%5cb", "/a/b"},
		{"/a%5Cb", "/a/b"},
		{"/a\\b", "/a/b"},
		{"\\a", bad},
		{"/\\a\\..\\b", "/b"},
		// Empty segments merged; the trailing slash kept.
		{"//", "/"},
		{"//a//b//", "/a/b/"},
		{"/a%2f%2fb", "/a/b"},
		// Dot segments, after decoding.
		{"/.", "/"},
		{"/..", "/"},
		{"/../../a", "/a"},
		{"/a/./b", "/a/b"},
		{"/a/../b", "/b"},
		{"/a/b/..", "/a/"},
		{"/a/b/.", "/a/b/"},
		{"/a/%2e/b", "/a/b"},
		{"/a/%2e%2e/b", "/b"},
		{"/a/%2E%2E/b", "/b"},
		{"/a/.%2e/b", "/b"},
		{"/a/..%2fb", "/b"},
		{"/a/..%5cb", "/b"},
		{"/a/%2e%2e%2fb", "/b"},
		{"/api/%2e%2e/papi/secret.txt", "/papi/secret.txt"},
		{"/api/x/..%2f..%2fpapi/secret.txt", "/papi/secret.txt"},
		{"//api/../papi/", "/papi/"},
	}
	for _, c := range cases {
		got, err := Canonical([]byte(c.raw))
		if c.want == bad {
			if err == nil {
				t.Errorf("Canonical(%q) = %q, want ErrBadPath", c.raw, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("Canonical(%q): %v, want %q", c.raw, err, c.want)
			continue
		}
		if string(got) != c.want {
			t.Errorf("Canonical(%q) = %q, want %q", c.raw, got, c.want)
		}
		esc := AppendEscaped(nil, got)
		again, err := Canonical(esc)
		if err != nil || !bytes.Equal(again, got) {
			t.Errorf("Canonical(AppendEscaped(%q) = %q) = %q, %v; want it back", got, esc, again, err)
		}
	}
}

func TestAppendEscaped(t *testing.T) {
	cases := []struct{ canon, want string }{
		{"/a/b", "/a/b"},
		{"/a b", "/a%20b"},
		{"/a%b", "/a%25b"},
		{"/a?b#c", "/a%3Fb%23c"},
		{"/a\nb\x7f", "/a%0Ab%7F"},
		{"/caf\xc3\xa9", "/caf%C3%A9"},
		{"/a\"<>`{}", "/a%22%3C%3E%60%7B%7D"},
		{"/a|b^[c]", "/a|b^[c]"},
		{"/a;b=c:d@e", "/a;b=c:d@e"},
	}
	for _, c := range cases {
		if got := AppendEscaped(nil, []byte(c.canon)); string(got) != c.want {
			t.Errorf("AppendEscaped(%q) = %q, want %q", c.canon, got, c.want)
		}
	}
}

func TestRawSafe(t *testing.T) {
	cases := []struct {
		raw  string
		safe bool
	}{
		{"/", true},
		{"/a/b", true},
		{"/a/b/", true},
		{"/api/projects/a%2Fb", true},
		{"/api/projects/a%2fb/c%5Cd", true},
		{"/a%20b/%61", true},
		{"/a/...", true},
		{"/a/.b", true},
		{"/a/%252e%252e/b", true}, // "%2e%2e" after one decoding: not a dot segment
		{"", false},
		{"a", false},
		{"//a", false},
		{"/a//b", false},
		{"/a/./b", false},
		{"/a/../b", false},
		{"/a/.", false},
		{"/a/..", false},
		{"/a/%2e/b", false},
		{"/a/%2E%2e/b", false},
		{"/a/.%2e", false},
		{"/a\\b", false},
		{"/a/..%2fb", false},
		{"/a/..%2Fb", false},
		{"/a/b%2f..", false},
		{"/a/b%5c..%5cc", false},
		{"/a/b%2f%2e%2e", false},
		{"/a%2f%2fb", false},
		{"/%2fa", false},
		{"/a%2f", false},
		{"/a%5C", false},
		{"/a/%2f", false},
	}
	for _, c := range cases {
		if got := RawSafe([]byte(c.raw)); got != c.safe {
			t.Errorf("RawSafe(%q) = %v, want %v", c.raw, got, c.safe)
		}
	}
}

// fixedSite is the route set of the fuzz target and the route tests: a
// proxy-like "/api/", an access-controlled "/papi/" and a deeper route.
func fixedSite(t testing.TB) *Site {
	var routes []*Route
	for _, p := range []string{"/", "/api/", "/papi/", "/api/projects/a", "/static", "/b c/", "/a%2Fb/"} {
		routes = append(routes, &Route{Prefix: p})
	}
	s := &Site{Name: "a", Hosts: []string{"a.test"}, Routes: routes}
	if _, err := NewTable([]*Site{s}); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestForwardable(t *testing.T) {
	s := fixedSite(t)
	cases := []struct {
		raw  string
		safe bool
	}{
		{"/api/x", true},
		{"/api/projects/b%2Fc", true},    // stays in "/api/"
		{"/api/projects/a%2Fb", false},   // canonical "/api/projects/a/b" is another route
		{"/api%2fx", false},              // raw "/", canonical "/api/"
		{"/%61pi/x", false},              // raw "/", canonical "/api/"
		{"/x/%61pi", true},               // "/" either way
		{"/papi%2Fsecret.txt", false},    // raw "/", canonical "/papi/"
		{"/api/..%2Fpapi/secret", false}, // a dot piece
		{"/api/x%2F..%2F..%2Fpapi", false},
		{"/api//x", false},
		{"/a%2Fb/x", false}, // prefix "/a%2Fb/" is "/a/b/"; raw taken literally is "/"
		{"/b%20c/x", false}, // prefix "/b c/"; raw taken literally is "/"
	}
	for _, c := range cases {
		canon, err := Canonical([]byte(c.raw))
		if err != nil {
			t.Fatalf("Canonical(%q): %v", c.raw, err)
		}
		if got := s.Forwardable([]byte(c.raw), canon); got != c.safe {
			t.Errorf("Forwardable(%q, %q) = %v, want %v", c.raw, canon, got, c.safe)
		}
	}
}

func TestRouteBoundaries(t *testing.T) {
	s := fixedSite(t)
	cases := []struct {
		raw, route string // "" for no route (a refused path)
	}{
		{"/papi/secret.txt#/../../api/x", ""},
		{"/api/%2e%2e/papi/%zz/../secret.txt", ""},
		{"/api/%2e%2e/papi/secret.txt", "/papi/"},
		{"/api/..%2fpapi/secret.txt", "/papi/"},
		{"/api/..%5cpapi/secret.txt", "/papi/"},
		{"/api\\..\\papi\\secret.txt", "/papi/"},
		{"/api/%c0%ae%c0%ae/papi/secret.txt", ""},
		{"/api/..;/papi/secret.txt", ""},
		{"//papi/secret.txt", "/papi/"},
		{"/./papi/secret.txt", "/papi/"},
		{"/papi%2fsecret.txt", "/papi/"},
		{"/%70api/secret.txt", "/papi/"},
		{"/api/x", "/api/"},
		{"/b%20c/x", "/b c/"},
		{"/a/b/x", "/a%2Fb/"}, // the prefix is matched canonical too
		{"/a%2fb/x", "/a%2Fb/"},
	}
	for _, c := range cases {
		got := ""
		if r := s.Route([]byte(c.raw)); r != nil {
			got = r.Prefix
		}
		if got != c.route {
			t.Errorf("Route(%q) = %q, want %q", c.raw, got, c.route)
		}
	}
}

// reference decodes a path the other way: url.PathUnescape, '\\' as '/',
// path.Clean. It is only asked about paths Canonical accepted.
func reference(raw string) (string, bool) {
	u, err := url.PathUnescape(raw)
	if err != nil {
		return "", false
	}
	return path.Clean("/" + strings.ReplaceAll(u, "\\", "/")), true
}

// upstreamView resolves raw as an upstream that keeps "%2F" and "%5C"
// encoded but decodes the rest ("%2e" included) before resolving dot
// segments would.
func upstreamView(raw string) string {
	r := strings.NewReplacer("%2f", "\x01", "%2F", "\x01", "%5c", "\x02", "%5C", "\x02")
	u, err := url.PathUnescape(r.Replace(raw))
	if err != nil {
		return ""
	}
	u = strings.NewReplacer("\x01", "%2F", "\x02", "%5C").Replace(u)
	return path.Clean("/" + u)
}

func prefixOf(r *Route) string {
	if r == nil {
		return "<none>"
	}
	return r.Prefix
}

func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		"/", "/a/b/", "/papi/secret.txt#/../../api/x", "/api/%2e%2e/papi/%zz/../secret.txt",
		"/api/%2e%2e/papi/secret.txt", "/api/..%2fpapi/x", "/api/..%5cpapi", "/a\\..\\papi",
		"/%c0%ae%c0%ae/papi", "/%e0%80%af", "//papi", "/./papi/", "/api/projects/a%2Fb",
		"/api/projects/x%2Fy", "/caf%C3%A9/", "/a%25b", "/a%00", "/api/..;/papi", "/b%20c/x",
		"/a%252Fb/x", "/.well-known/a", "/api/x/.%2e/%2e%2e/papi/",
	} {
		f.Add(s)
	}
	s := fixedSite(f)
	f.Fuzz(func(t *testing.T, raw string) {
		canon, err := Canonical([]byte(raw))
		if err != nil {
			return
		}
		c := string(canon)
		if c == "" || c[0] != '/' || strings.Contains(c, "/../") || strings.Contains(c, "/./") ||
			strings.Contains(c, "//") || strings.ContainsAny(c, "\\\x00") ||
			strings.HasSuffix(c, "/..") || strings.HasSuffix(c, "/.") {
			t.Fatalf("Canonical(%q) = %q: not canonical", raw, c)
		}
		esc := AppendEscaped(nil, canon)
		again, err := Canonical(esc)
		if err != nil || string(again) != c {
			t.Fatalf("Canonical(%q) = %q; escaped %q gives %q, %v", raw, c, esc, again, err)
		}
		ref, ok := reference(raw)
		if !ok {
			t.Fatalf("Canonical accepted %q, the reference decoder did not", raw)
		}
		if strings.TrimSuffix(c, "/") != strings.TrimSuffix(ref, "/") && !(c == "/" && ref == "/") {
			t.Fatalf("Canonical(%q) = %q, reference %q", raw, c, ref)
		}
		route := s.Match(canon)
		if r := s.Route([]byte(raw)); r != route {
			t.Fatalf("Route(%q) = %s, Route of its canonical %q = %s", raw, prefixOf(r), c, prefixOf(route))
		}
		if r := s.Match([]byte(ref)); r != route {
			t.Fatalf("%q: canonical %q routes to %s, reference %q to %s", raw, c, prefixOf(route), ref, prefixOf(r))
		}
		if s.Forwardable([]byte(raw), canon) {
			if up := upstreamView(raw); s.Match([]byte(up)) != route {
				t.Fatalf("%q forwardable, but an upstream keeping %%2F resolves it to %q, route %s, not %s", raw, up, prefixOf(s.Match([]byte(up))), prefixOf(route))
			}
			if r := s.Match([]byte(ref)); r != route {
				t.Fatalf("%q forwardable, but an upstream decoding %%2F resolves it to %q, route %s, not %s", raw, ref, prefixOf(r), prefixOf(route))
			}
		}
	})
}

func BenchmarkCanonical(b *testing.B) {
	for _, p := range []string{"/assets/app.js", "/.well-known/acme-challenge/x", "/api/%2e%2e/papi/a%20b"} {
		b.Run(p, func(b *testing.B) {
			raw := []byte(p)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Canonical(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
