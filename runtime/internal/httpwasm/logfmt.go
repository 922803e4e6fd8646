package httpwasm

import (
	"log/slog"
	"strings"
)

// maxLogFields bounds the fields split out of one guest log line; a line
// with more keeps them in its message.
const maxLogFields = 32

// splitLogfmt splits the trailing key=value pairs the SDKs' LogKV writes
// after a message (`denied path=/admin reason="no token"`, see
// sdk/README.md) into slog attributes, so the server's log shows them as
// fields and not folded into msg. A line that does not end in well-formed
// pairs is left whole. Values are unquoted as the SDKs quote them (\" \\
// \n \xHH); the log handler quotes and escapes them again on output, so a
// CR, LF or NUL from a guest never starts a line of its own.
func splitLogfmt(line string) (msg string, attrs []slog.Attr) {
	// Walk back over the pairs: each is preceded by a space, and end
	// stops at the space before the last pair parsed.
	end := len(line)
	var rev []slog.Attr
	for end > 0 && len(rev) < maxLogFields {
		start, key, val, ok := lastPair(line[:end])
		if !ok {
			break
		}
		rev = append(rev, slog.String(key, val))
		end = start - 1
	}
	if len(rev) == 0 || strings.TrimRight(line[:end], " ") == "" {
		return line, nil
	}
	attrs = make([]slog.Attr, len(rev))
	for i, a := range rev {
		attrs[len(rev)-1-i] = a
	}
	return strings.TrimRight(line[:end], " "), attrs
}

// lastPair parses the key=value pair that ends s and is preceded by a
// space: it returns where the pair starts.
func lastPair(s string) (start int, key, val string, ok bool) {
	var vstart int
	if strings.HasSuffix(s, `"`) && len(s) >= 2 {
		// A quoted value: find its opening quote, skipping escaped ones.
		i := len(s) - 2
		for ; i >= 0; i-- {
			if s[i] == '"' && !escaped(s, i) {
				break
			}
		}
		if i < 1 || s[i-1] != '=' {
			return 0, "", "", false
		}
		v, good := unquote(s[i+1 : len(s)-1])
		if !good {
			return 0, "", "", false
		}
		val, vstart = v, i
	} else {
		i := strings.LastIndexAny(s, " =\"")
		if i < 0 || s[i] != '=' {
			return 0, "", "", false
		}
		val, vstart = s[i+1:], i+1
	}
	eq := vstart - 1
	ks := strings.LastIndexByte(s[:eq], ' ') + 1
	key = s[ks:eq]
	if key == "" || ks == 0 || strings.ContainsAny(key, "=\"") {
		return 0, "", "", false
	}
	return ks, key, val, true
}

// escaped reports whether the byte at i is escaped by an odd run of
// backslashes before it.
func escaped(s string, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && s[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// unquote undoes the SDKs' quoting of a value.
func unquote(s string) (string, bool) {
	if !strings.ContainsRune(s, '\\') {
		return s, !strings.ContainsRune(s, '"')
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '"' {
			return "", false
		}
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(s) {
			return "", false
		}
		i++
		switch s[i] {
		case '"', '\\':
			b.WriteByte(s[i])
		case 'n':
			b.WriteByte('\n')
		case 'x':
			if i+2 >= len(s) {
				return "", false
			}
			h, l := unhex(s[i+1]), unhex(s[i+2])
			if h < 0 || l < 0 {
				return "", false
			}
			b.WriteByte(byte(h<<4 | l))
			i += 2
		default:
			return "", false
		}
	}
	return b.String(), true
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}
