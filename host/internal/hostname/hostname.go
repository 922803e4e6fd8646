// Package hostname is the one rule by which a name chooses a site: from
// a TLS server name (host/tlsconf, at the handshake) and from a Host
// header or :authority (host/route, for each request) alike, so that
// the two can never pick different sites for the same name.
//
// A name is folded once, the same way for both: a port is dropped (a
// trailing ":digits"), then one trailing dot, then ASCII letters go to
// lower case; an IPv6 literal keeps its brackets ("[::1]:443" is
// "[::1]"). A site's names are folded the same way when they are added.
// The folded name selects the site that has it exactly, else the site of
// the longest wildcard "*.example.com" it ends in (one or more labels
// before ".example.com"), else none (the caller's default site).
package hostname

import (
	"bytes"
	"strings"
)

// MaxLen is the longest name folded; a longer one is no DNS name and
// selects no site.
const MaxLen = 255

// Table maps names to sites (V). Its zero value is not usable; use New.
// It is built once, then safe for concurrent lookups.
type Table[V comparable] struct {
	exact map[string]V
	wild  []wildcard[V] // longest suffix first
}

type wildcard[V comparable] struct {
	suffix string // ".example.com"
	v      V
}

// New returns an empty table.
func New[V comparable]() *Table[V] { return &Table[V]{exact: map[string]V{}} }

// Add makes name (a site's name or alias, or a wildcard "*.example.com")
// select v. Names that select nothing by name ("", "*", "_": such a site
// is reached as the default) are skipped. It returns the other site that
// already has the name and false when one does; an exact name has one
// site.
func (t *Table[V]) Add(name string, v V) (other V, ok bool) {
	h := strings.TrimSuffix(strings.ToLower(name), ".")
	switch {
	case h == "" || h == "*" || h == "_":
	case strings.HasPrefix(h, "*."):
		i := len(t.wild)
		for i > 0 && len(t.wild[i-1].suffix) < len(h)-1 {
			i-- // longest suffix first; among equals, the first added
		}
		t.wild = append(t.wild, wildcard[V]{})
		copy(t.wild[i+1:], t.wild[i:])
		t.wild[i] = wildcard[V]{suffix: h[1:], v: v}
	default:
		if o, dup := t.exact[h]; dup && o != v {
			return o, false
		}
		t.exact[h] = v
	}
	return other, true
}

// Lookup returns the site the name host selects (a Host header or
// :authority with or without its port, or a TLS server name), and false
// when it selects none. It does not allocate.
func (t *Table[V]) Lookup(host []byte) (V, bool) {
	var buf [MaxLen]byte
	h, ok := Fold(&buf, host)
	if !ok {
		var none V
		return none, false
	}
	if v, ok := t.exact[string(h)]; ok { // no allocation: map index by string(bytes)
		return v, true
	}
	for _, w := range t.wild {
		if len(h) > len(w.suffix) && string(h[len(h)-len(w.suffix):]) == w.suffix {
			return w.v, true
		}
	}
	var none V
	return none, false
}

// Fold writes the name host selects by into buf and returns it: without
// its port and trailing dot, in lower case (see the package comment).
// It reports false for an empty name or one longer than MaxLen.
func Fold(buf *[MaxLen]byte, host []byte) ([]byte, bool) {
	if len(host) > 0 && host[0] == '[' { // IPv6 literal: keep up to ']'
		if i := bytes.IndexByte(host, ']'); i >= 0 {
			host = host[:i+1]
		}
	} else {
		for i := len(host) - 1; i >= 0; i-- {
			if host[i] == ':' {
				host = host[:i]
				break
			}
			if host[i] < '0' || host[i] > '9' {
				break
			}
		}
	}
	if len(host) > 0 && host[len(host)-1] == '.' {
		host = host[:len(host)-1]
	}
	if len(host) == 0 || len(host) > MaxLen {
		return nil, false
	}
	for i, c := range host {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return buf[:len(host)], true
}
