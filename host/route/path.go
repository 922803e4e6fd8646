package route

import "errors"

// ErrBadPath is returned by Canonical for a request path that cannot be
// served: it does not start with '/', has a malformed escape, a '#', a
// NUL, a byte RFC 3986 forbids in a path, an overlong UTF-8 form, or a
// ";" parameter on a dot segment. The host answers it with 400.
var ErrBadPath = errors.New("route: malformed request path")

// Byte classes of a request path as sent.
const (
	bad   = iota // never valid in a path as sent: 400
	plain        // stands for itself
	pct          // '%', starts an escape
	slash        // '\\', a separator like '/'
)

// class gives each byte of a path as sent its class. Besides what RFC
// 3986 allows in a path (pchar and '/'), it lets through '|', '^', '['
// and ']', which browsers send unescaped (WHATWG's path percent-encode
// set leaves them alone) and which no path resolver reads as a
// delimiter. Everything else outside pchar is refused: controls, space,
// '"', '#', '<', '>', '?', '`', '{', '}', DEL and every non-ASCII byte.
var class = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			t[c] = plain
		}
	}
	for _, c := range []byte("-._~!$&'()*+,;=:@/|^[]") {
		t[c] = plain
	}
	t['%'] = pct
	t['\\'] = slash
	return t
}()

// Canonical returns the one path every stage after routing sees: raw
// (the request target's path, without the query) percent-decoded once,
// '\\' and its escape read as '/', dot segments resolved as RFC 3986
// (5.2.4) does, after decoding, so "%2e%2e" counts, and empty segments
// merged. A trailing slash is kept, and a path ending in a dot segment
// gets one ("/a/b/.." is "/a/"). ".." above the root stays at the root.
//
// A decoded "%2F" is a separator like any '/': the canonical path is
// what a file system, or an upstream that decodes, would resolve.
//
// It fails with ErrBadPath on what cannot be read one way only (see
// ErrBadPath). An already canonical path is returned as is, with no
// allocation; anything else gets a new slice. The result holds decoded
// bytes ('%', '?', space, non-ASCII); Escape turns it back into a
// request path.
func Canonical(raw []byte) ([]byte, error) {
	if clean(raw) {
		return raw, nil
	}
	if len(raw) == 0 || raw[0] != '/' {
		return nil, ErrBadPath
	}
	p := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch class[c] {
		case bad:
			return nil, ErrBadPath
		case slash:
			c = '/'
		case pct:
			d, ok := DecodeEscape(raw[i:])
			if !ok {
				return nil, ErrBadPath
			}
			c = d
			i += 2
			switch c {
			case 0:
				return nil, ErrBadPath
			case '\\':
				c = '/'
			}
		}
		p = append(p, c)
	}
	if overlong(p) || dotParam(p) {
		return nil, ErrBadPath
	}
	return p[:Normalize(p)], nil
}

// clean reports whether p is already canonical, so that the common case
// needs no work and no allocation: it starts with '/', every byte stands
// for itself, and there are no empty, "." or ".." segments.
func clean(p []byte) bool {
	if len(p) == 0 || p[0] != '/' {
		return false
	}
	start := 1 // of the current segment
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			if class[p[i]] != plain {
				return false
			}
			continue
		}
		seg := p[start:i]
		switch len(seg) {
		case 0:
			if i < len(p) { // "//"; an empty last segment is a trailing slash
				return false
			}
		case 1:
			if seg[0] == '.' {
				return false
			}
		case 2:
			if seg[0] == '.' && seg[1] == '.' {
				return false
			}
		}
		if len(seg) > 1 && seg[0] == '.' && (seg[1] == ';' || len(seg) > 2 && seg[1] == '.' && seg[2] == ';') {
			return false // ".;x" or "..;x": dotParam refuses it
		}
		start = i + 1
	}
	return true
}

// overlong reports whether decoded bytes hold an overlong UTF-8 form
// ("\xc0\xaf" for '/', "\xe0\x80\xae" for '.') or a lead byte no UTF-8
// has: old decoders read those as the ASCII they spell.
func overlong(p []byte) bool {
	for i, c := range p {
		if c < 0xc0 {
			continue
		}
		switch {
		case c == 0xc0, c == 0xc1, c >= 0xf8:
			return true
		case c == 0xe0:
			if i+1 < len(p) && p[i+1] < 0xa0 {
				return true
			}
		case c == 0xf0:
			if i+1 < len(p) && p[i+1] < 0x90 {
				return true
			}
		}
	}
	return false
}

// dotParam reports whether a segment of decoded p is a dot segment with a
// ";" parameter (".;x", "..;x"): Tomcat and Jetty drop the parameter and
// resolve the dots, so the upstream would see another path than ours.
func dotParam(p []byte) bool {
	for i := 0; i+1 < len(p); i++ {
		if p[i] != '/' || p[i+1] != '.' {
			continue
		}
		j := i + 2
		if j < len(p) && p[j] == '.' {
			j++
		}
		if j < len(p) && p[j] == ';' {
			return true
		}
	}
	return false
}

// Normalize resolves dot segments and merges empty ones in place (p
// starts with '/') and returns the new length; a trailing slash, or a
// final dot segment, leaves one. It never writes past the byte it has
// just read, so the output can share p. The static handler cleans the
// paths it is given (a filter may have rewritten one) with it too.
func Normalize(p []byte) int {
	n := len(p)
	w := 0
	endSlash := n > 0 && p[n-1] == '/'
	trailing := endSlash
	for r := 0; r < n; {
		if p[r] == '/' {
			r++
			continue
		}
		e := r
		for e < n && p[e] != '/' {
			e++
		}
		switch {
		case e-r == 1 && p[r] == '.':
			trailing = true
		case e-r == 2 && p[r] == '.' && p[r+1] == '.':
			for w > 0 {
				w--
				if p[w] == '/' {
					break
				}
			}
			trailing = true
		default:
			p[w] = '/'
			w += 1 + copy(p[w+1:], p[r:e])
			trailing = endSlash
		}
		r = e
	}
	if w == 0 {
		p[0] = '/'
		return 1
	}
	if trailing {
		p[w] = '/'
		w++
	}
	return w
}

// DecodeEscape decodes the percent-escape ("%2F") that b starts with. It
// reports false when b is shorter than three bytes or either digit is not
// hexadecimal. The static handler decodes with it too.
func DecodeEscape(b []byte) (byte, bool) {
	if len(b) < 3 || b[0] != '%' {
		return 0, false
	}
	hi, ok1 := unhex(b[1])
	lo, ok2 := unhex(b[2])
	return hi<<4 | lo, ok1 && ok2
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// AppendEscaped appends canon, a path from Canonical, as a request path:
// '%' and every byte a path may not carry as sent ('?', '#', controls,
// space, non-ASCII, …) percent-encoded, the rest as is. Canonical of the
// result is canon again.
func AppendEscaped(dst, canon []byte) []byte {
	const hex = "0123456789ABCDEF"
	for _, c := range canon {
		if class[c] == plain {
			dst = append(dst, c)
			continue
		}
		dst = append(dst, '%', hex[c>>4], hex[c&15])
	}
	return dst
}

// RawSafe reports whether raw, a request path that Canonical accepted,
// may go upstream as sent: no upstream can resolve it across a segment
// its canonical form does not have. That holds when no segment is empty
// ("//") or a dot segment ("." or "..", "%2e" read as '.'), there is no
// '\\', and a segment with an encoded separator ("%2F", "%5C") splits,
// at them, into pieces that are neither empty nor dot segments. So
// "/api/projects/a%2Fb" is safe (GitLab's project ids), and
// "/api/..%2Fpapi" or "/a/%2e%2e/b" are not.
//
// RawSafe does not look at routes; Site.Forwardable adds that check.
func RawSafe(raw []byte) bool {
	if len(raw) == 0 || raw[0] != '/' {
		return false
	}
	afterEnc := false // the separator before the current piece was encoded
	for i := 1; ; {
		j, next, enc := i, len(raw), false // the piece is raw[i:j]
		for ; j < len(raw); j++ {
			c := raw[j]
			if c == '\\' {
				return false
			}
			if c == '/' {
				next = j + 1
				break
			}
			if c == '%' && j+2 < len(raw) && isEncodedSep(raw[j+1], raw[j+2]) {
				next, enc = j+3, true
				break
			}
		}
		piece := raw[i:j]
		if j == len(raw) { // the last piece: empty only after a plain '/'
			if len(piece) == 0 {
				return !afterEnc
			}
			return !dotOrEmpty(piece)
		}
		if dotOrEmpty(piece) {
			return false
		}
		i, afterEnc = next, enc
	}
}

// isEncodedSep reports whether "%hl" encodes '/' or '\\'.
func isEncodedSep(h, l byte) bool {
	if h != '2' && h != '5' {
		return false
	}
	return (h == '2' && (l == 'f' || l == 'F')) || (h == '5' && (l == 'c' || l == 'C'))
}

// dotOrEmpty reports whether a piece of a raw path is empty or, with
// "%2e" read as '.', "." or "..".
func dotOrEmpty(piece []byte) bool {
	dots := 0
	for i := 0; i < len(piece); i++ {
		switch {
		case piece[i] == '.':
			dots++
		case piece[i] == '%' && i+2 < len(piece) && piece[i+1] == '2' && (piece[i+2] == 'e' || piece[i+2] == 'E'):
			dots++
			i += 2
		default:
			return false
		}
	}
	return dots <= 2
}
