package static

import "github.com/sluicehq/sluice/host/route"

// pathStatus is the outcome of cleaning a request path.
type pathStatus uint8

const (
	pathOK       pathStatus = iota
	pathBad                 // 400: malformed escape or NUL
	pathNotFound            // 404: encoded slash or a backslash
)

// cleanPath percent-decodes raw once, then normalizes it and appends the
// result to dst: one leading slash, no empty, "." or ".." segments (".."
// above the root stays at the root), and a trailing slash when raw ended
// with one or with a "." or ".." segment, so "/a/b/.." is the directory
// "/a/". Segments keep any other bytes as they are.
//
// It refuses what could name something other than what it seems to: a
// NUL (pathBad), a "%2F" inside a segment and any backslash, encoded or
// not (pathNotFound; on Linux they are ordinary bytes, elsewhere they are
// separators).
//
// Behind the host, raw is already the canonical path, escaped
// (route.Canonical, route.AppendEscaped): decoding it gives that path
// back and the refusals never fire. They stay for a path a filter
// rewrote, and for the handler used on its own.
func cleanPath(dst, raw []byte) ([]byte, pathStatus) {
	start := len(dst)
	if len(raw) == 0 || raw[0] != '/' {
		dst = append(dst, '/')
	}
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch c {
		case '%':
			d, ok := route.DecodeEscape(raw[i:])
			if !ok {
				return dst[:start], pathBad
			}
			c = d
			i += 2
			switch c {
			case '/', '\\':
				return dst[:start], pathNotFound
			case 0:
				return dst[:start], pathBad
			}
		case '\\':
			return dst[:start], pathNotFound
		case 0:
			return dst[:start], pathBad
		}
		dst = append(dst, c)
	}
	n := route.Normalize(dst[start:])
	return dst[:start+n], pathOK
}

// hiddenSegment reports whether a cleaned path has a segment starting
// with '.', other than a leading "/.well-known/".
func hiddenSegment(p []byte) bool {
	for i := 0; i+1 < len(p); i++ {
		if p[i] == '/' && p[i+1] == '.' {
			if i == 0 && len(p) >= 12 && string(p[1:12]) == ".well-known" && (len(p) == 12 || p[12] == '/') {
				continue
			}
			return true
		}
	}
	return false
}
