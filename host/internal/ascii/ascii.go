package ascii

import "bytes"

// TrimOWS returns b without leading and trailing optional whitespace
// (spaces and horizontal tabs, RFC 9110, section 5.6.3).
func TrimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// Lower returns c in lower case when it is an ASCII upper-case letter.
func Lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// EqualFold reports whether b and s are equal under ASCII case folding
// (field names and tokens are ASCII; no Unicode folding).
func EqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if c, d := b[i], s[i]; c != d && Lower(c) != Lower(d) {
			return false
		}
	}
	return true
}

// HasToken reports whether the comma-separated list v holds tok, ASCII
// case-insensitively, ignoring whitespace around elements and empty
// elements ("close, Upgrade" holds "upgrade").
func HasToken(v []byte, tok string) bool {
	for len(v) > 0 {
		var t []byte
		if i := bytes.IndexByte(v, ','); i >= 0 {
			t, v = v[:i], v[i+1:]
		} else {
			t, v = v, nil
		}
		if EqualFold(TrimOWS(t), tok) {
			return true
		}
	}
	return false
}

// Token reports whether b is a non-empty token (RFC 9110, section
// 5.6.2): a method or a field name. The front door (host/frontdoor) and
// the proxy's request writer (host/proxy: head.go) both refuse by it.
func Token(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !tchar[c] {
			return false
		}
	}
	return true
}

// tchar marks the bytes of a token.
var tchar = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range []byte("!#$%&'*+-.^_`|~") {
		t[c] = true
	}
	return t
}()
