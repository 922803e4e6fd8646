package runtime

import (
	"strconv"
	"strings"
)

// demangledError is a trap whose stack names Rust functions by their
// source names: wazero prints the name section as it is, and rustc's
// names are mangled (`_ZN6filter11check_token17h2db70a152e43bca0E`).
type demangledError struct {
	msg string
	err error
}

func (e *demangledError) Error() string { return e.msg }
func (e *demangledError) Unwrap() error { return e.err }

// demangleTrap returns err with the Rust symbols of its stack trace
// demangled (`filter::check_token`), or err itself when there are none.
// Only failed calls get here: never on a request that succeeds.
func demangleTrap(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if !strings.Contains(msg, "_ZN") {
		return err
	}
	if out := demangleAll(msg); out != msg {
		return &demangledError{msg: out, err: err}
	}
	return err
}

// demangleAll replaces each Rust legacy-mangled symbol in s.
func demangleAll(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "_ZN")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		name, n, ok := demangle(s[i:])
		b.WriteString(s[:i])
		if ok {
			b.WriteString(name)
			s = s[i+n:]
		} else {
			b.WriteString("_ZN")
			s = s[i+3:]
		}
	}
}

// demangle decodes the symbol at the start of s: `_ZN`, length-prefixed
// path segments, `E`; the trailing `h<hash>` segment is dropped. It
// returns the name and how many bytes of s it used.
func demangle(s string) (string, int, bool) {
	i := 3
	var parts []string
	for i < len(s) && s[i] != 'E' {
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(s[i:j])
		if err != nil || n <= 0 || j+n > len(s) {
			return "", 0, false
		}
		parts = append(parts, s[j:j+n])
		i = j + n
	}
	if i >= len(s) || len(parts) == 0 {
		return "", 0, false
	}
	if last := parts[len(parts)-1]; len(last) == 17 && last[0] == 'h' && isHex(last[1:]) {
		parts = parts[:len(parts)-1]
	}
	for k, p := range parts {
		parts[k] = unescapeSegment(p)
	}
	return strings.Join(parts, "::"), i + 1, len(parts) > 0
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// rustEscapes are the `$…$` escapes of rustc's legacy mangling.
var rustEscapes = map[string]string{"SP": "@", "BP": "*", "RF": "&", "LT": "<", "GT": ">", "LP": "(", "RP": ")", "C": ","}

func unescapeSegment(p string) string {
	if strings.HasPrefix(p, "_$") {
		p = p[1:]
	}
	var b strings.Builder
	for len(p) > 0 {
		switch {
		case strings.HasPrefix(p, ".."):
			b.WriteString("::")
			p = p[2:]
		case p[0] == '$':
			end := strings.IndexByte(p[1:], '$')
			if end < 0 {
				b.WriteString(p)
				return b.String()
			}
			code := p[1 : 1+end]
			if r, ok := rustEscapes[code]; ok {
				b.WriteString(r)
			} else if v, err := strconv.ParseUint(strings.TrimPrefix(code, "u"), 16, 32); err == nil && code[0] == 'u' {
				b.WriteRune(rune(v))
			} else {
				b.WriteString(p[:end+2])
			}
			p = p[end+2:]
		default:
			b.WriteByte(p[0])
			p = p[1:]
		}
	}
	return b.String()
}
