package proxy

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/exchange"
)

func TestHead(t *testing.T) {
	for _, tc := range []struct {
		name    string
		build   func(h *head)
		lines   string
		cookies string
	}{
		{"add keeps order and case", func(h *head) {
			h.add([]byte("X-A"), []byte("1"))
			h.add([]byte("x-b"), []byte("2"))
		}, "X-A: 1\r\nx-b: 2\r\n", ""},
		{"cookies join", func(h *head) {
			h.add([]byte("Cookie"), []byte("a=1"))
			h.add([]byte("X-A"), []byte("1"))
			h.add([]byte("cookie"), []byte("b=2"))
		}, "X-A: 1\r\n", "a=1; b=2"},
		{"del removes every line of a name, any case", func(h *head) {
			h.add([]byte("X-A"), []byte("1"))
			h.add([]byte("X-B"), []byte("2"))
			h.add([]byte("x-a"), []byte("3"))
			h.add([]byte("X-AB"), []byte("4"))
			h.del("X-a")
		}, "X-B: 2\r\nX-AB: 4\r\n", ""},
		{"del of the last line", func(h *head) {
			h.add([]byte("X-A"), []byte("1"))
			h.add([]byte("X-B"), []byte("2"))
			h.del("x-b")
		}, "X-A: 1\r\n", ""},
		{"del cookie", func(h *head) {
			h.add([]byte("Cookie"), []byte("a=1"))
			h.del("COOKIE")
		}, "", ""},
		{"CR and LF are refused, not written", func(h *head) {
			h.add([]byte("X-A"), []byte("1\r\nX-Evil: 2"))
			h.add([]byte("Cookie"), []byte("a=1\nb"))
			h.add([]byte("X-B"), []byte("2"))
		}, "X-B: 2\r\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h head
			tc.build(&h)
			if string(h.lines) != tc.lines || string(h.cookies) != tc.cookies {
				t.Fatalf("lines %q cookies %q; want %q %q", h.lines, h.cookies, tc.lines, tc.cookies)
			}
			h.reset()
			if len(h.lines)+len(h.cookies)+len(h.wire) != 0 {
				t.Fatal("reset left bytes")
			}
		})
	}
}

// TestHeadEmptyCookie: an empty Cookie field is kept as one, and an
// empty crumb adds no separator.
func TestHeadEmptyCookie(t *testing.T) {
	var h head
	h.add([]byte("Cookie"), []byte(""))
	if !h.cookie || len(h.cookies) != 0 {
		t.Fatalf("empty Cookie: present %v, %q", h.cookie, h.cookies)
	}
	h.add([]byte("Cookie"), []byte(`a=1; c="q\"x"`))
	h.add([]byte("Cookie"), []byte(""))
	h.add([]byte("Cookie"), []byte(`d=v\w`))
	if want := `a=1; c="q\"x"; d=v\w`; string(h.cookies) != want {
		t.Fatalf("cookies %q, want %q", h.cookies, want)
	}
	h.del("cookie")
	if h.cookie {
		t.Fatal("del left the Cookie field")
	}
	h.add([]byte("Cookie"), nil)
	h.reset()
	if h.cookie {
		t.Fatal("reset left the Cookie field")
	}
}

func TestBodyless(t *testing.T) {
	for m, want := range map[string]bool{"GET": true, "HEAD": true, "POST": false, "DELETE": false, "OPTIONS": false} {
		if bodyless([]byte(m)) != want {
			t.Errorf("bodyless(%s) != %v", m, want)
		}
	}
}

// headExchange is what buildH1 reads of a request.
type headExchange struct {
	exchange.Exchange // nil: buildH1 reads nothing else
	method, host      string
}

func (x *headExchange) Method() []byte              { return []byte(x.method) }
func (x *headExchange) Host() []byte                { return []byte(x.host) }
func (x *headExchange) RequestHeader(string) []byte { return nil }

// TestBuildH1Refuses: the request writer, on its own, refuses to write a
// CR, LF or NUL it was given in the method, the target, Host or a field
// (the second line against request smuggling, issue 21, finding 1);
// nothing of such a head is written. A clean head is written as is.
func TestBuildH1Refuses(t *testing.T) {
	const smuggle = " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nPOST /api/capture HTTP/1.1\r\nContent-Length: 200\r\nX-Rest: "
	for _, c := range []struct {
		name, method, uri, host string
		keepHost                bool
		fields                  [][2]string
		refused                 bool
	}{
		{"clean", "GET", "/a?q=1", "", false, [][2]string{{"X-A", "1"}, {"Cookie", "a=1"}}, false},
		{"clean, client's Host", "GET", "/a", "a.test:8080", true, nil, false},
		{"method carrying a request line", "GET /papi/secret.txt HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Junk:", "/api/x", "", false, nil, true},
		{"method with SP", "G T", "/", "", false, nil, true},
		{"method with NUL", "GET\x00", "/", "", false, nil, true},
		{"empty method", "", "/", "", false, nil, true},
		{"target carrying a second request", "GET", "/api/a?q" + smuggle, "", false, nil, true},
		{"target with LF", "GET", "/a\nb", "", false, nil, true},
		{"target with NUL in the query", "GET", "/a?q=\x00", "", false, nil, true},
		{"target with SP", "GET", "/a b", "", false, nil, true},
		{"empty target", "GET", "", "", false, nil, true},
		{"Host with CR LF", "GET", "/", "a.test\r\nX-Evil: 1", true, nil, true},
		{"Host with NUL", "GET", "/", "a.test\x00", true, nil, true},
		{"value with CR LF", "GET", "/", "", false, [][2]string{{"X-A", "1\r\nX-Evil: 2"}}, true},
		{"value with LF", "GET", "/", "", false, [][2]string{{"X-A", "1\nX-Evil: 2"}}, true},
		{"value with NUL", "GET", "/", "", false, [][2]string{{"X-A", "1\x00"}}, true},
		{"cookie with CR LF", "GET", "/", "", false, [][2]string{{"Cookie", "a=1\r\nX-Evil: 2"}}, true},
		{"name with CR LF", "GET", "/", "", false, [][2]string{{"X-A\r\nX-Evil", "2"}}, true},
		{"name with SP", "GET", "/", "", false, [][2]string{{"X A", "1"}}, true},
		{"name with a colon", "GET", "/", "", false, [][2]string{{"X:A", "1"}}, true},
		{"empty name", "GET", "/", "", false, [][2]string{{"", "1"}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newState(&Handler{keepHost: c.keepHost})
			s.x = &headExchange{method: c.method, host: c.host}
			s.uri = []byte(c.uri)
			for _, f := range c.fields {
				s.put([]byte(f[0]), []byte(f[1]))
			}
			err := s.buildH1(&upstream{t: target{host: "up.test:80"}})
			if c.refused {
				if err != errUnwritable || exchange.StatusOf(err) != 400 {
					t.Fatalf("err %v, want errUnwritable (400)", err)
				}
				if len(s.hd.wire) != 0 {
					t.Fatalf("wrote %q", s.hd.wire)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			w := string(s.hd.wire)
			if !strings.HasPrefix(w, c.method+" "+c.uri+" HTTP/1.1\r\n") || strings.Count(w, "\r\n\r\n") != 1 || !strings.HasSuffix(w, "\r\n\r\n") {
				t.Fatalf("wrote %q", w)
			}
		})
	}
}
