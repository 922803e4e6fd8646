package proxy

import "testing"

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
		{"CR and LF cannot start a line", func(h *head) {
			h.add([]byte("X-A"), []byte("1\r\nX-Evil: 2"))
			h.add([]byte("Cookie"), []byte("a=1\nb"))
		}, "X-A: 1  X-Evil: 2\r\n", "a=1 b"},
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
