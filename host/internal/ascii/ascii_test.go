package ascii

import "testing"

func TestTrimOWS(t *testing.T) {
	for in, want := range map[string]string{"": "", "a": "a", " \ta b\t ": "a b", "\t\t": "", " x": "x", "x ": "x", "\r\nx": "\r\nx"} {
		if got := string(TrimOWS([]byte(in))); got != want {
			t.Errorf("TrimOWS(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEqualFold(t *testing.T) {
	cases := []struct {
		b, s string
		want bool
	}{
		{"", "", true},
		{"Upgrade", "upgrade", true},
		{"upgrade", "UPGRADE", true},
		{"gzip", "gzip", true},
		{"gzi", "gzip", false},
		{"gzip", "gzip ", false},
		{"[", "{", false}, // 0x5b and 0x7b differ by 0x20 but are not letters
		{"@", "`", false},
		{"K", "\u212a"[:1], false}, // no Unicode folding
	}
	for _, c := range cases {
		if got := EqualFold([]byte(c.b), c.s); got != c.want {
			t.Errorf("EqualFold(%q, %q) = %v", c.b, c.s, got)
		}
	}
}

func TestHasToken(t *testing.T) {
	cases := []struct {
		v, tok string
		want   bool
	}{
		{"upgrade", "upgrade", true},
		{"keep-alive, Upgrade", "upgrade", true},
		{" close ,\tUPGRADE\t", "upgrade", true},
		{",,upgrade,,", "upgrade", true},
		{"upgrader", "upgrade", false},
		{"up grade", "upgrade", false},
		{"", "upgrade", false},
		{"close", "upgrade", false},
	}
	for _, c := range cases {
		if got := HasToken([]byte(c.v), c.tok); got != c.want {
			t.Errorf("HasToken(%q, %q) = %v", c.v, c.tok, got)
		}
	}
}

func BenchmarkHasToken(b *testing.B) {
	v := []byte("keep-alive, te, Upgrade")
	b.ReportAllocs()
	for b.Loop() {
		if !HasToken(v, "upgrade") {
			b.Fatal("not found")
		}
	}
}

func TestToken(t *testing.T) {
	for s, want := range map[string]bool{
		"GET": true, "x-forwarded-for": true, "!#$%&'*+-.^_`|~09azAZ": true,
		"": false, "GET /": false, "a\r\nb": false, "a\x00": false, "a:b": false, "é": false, `"q"`: false,
	} {
		if got := Token([]byte(s)); got != want {
			t.Errorf("Token(%q) = %v, want %v", s, got, want)
		}
	}
}
