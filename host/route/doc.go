// Package route picks the site and the route for a request: the site by
// Host (exact names, aliases, "*.suffix" wildcards, then the listener's
// default; port, trailing dot and letter case ignored), by
// host/internal/hostname's rule, the one tlsconf picks a site by from a
// TLS server name, and the route by the longest path prefix, matched
// against the request's canonical path.
//
// Canonical is the one canonicaliser of request paths: percent-decoded
// once, '\\' and "%5C" read as '/', dot segments resolved after decoding,
// empty segments merged, a trailing slash kept; a path that cannot be read
// one way only (a malformed escape, '#', NUL, a byte RFC 3986 forbids, an
// overlong UTF-8 form) is ErrBadPath, which the host answers with 400.
// The host rewrites the request to that path (AppendEscaped) so that
// every later stage sees it. RawSafe and Site.Forwardable decide whether
// the path as sent may still go upstream: only when no upstream could
// resolve it onto another route ("%2F" inside a segment, say).
//
// Where it sits on the request path: right after the engine hands over an
// exchange, before the route's request filters. A Table is built once per
// config generation and never changes; Canonical and Match allocate nothing
// for a path that is already canonical.
//
// What it imports is drawn in host/README.md.
package route
