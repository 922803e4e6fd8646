package route

import (
	"fmt"
	"sort"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/internal/hostname"
)

// Route is one path prefix of a site and what serves it.
type Route struct {
	// Prefix is the path prefix, starting with "/", matched on segment
	// boundaries: "/api" matches "/api" and "/api/x" but not "/apix"; a
	// prefix ending in "/" also matches the path without it. Prefix and
	// request path are compared in their canonical forms ("/a%20b"
	// matches "/a b/x" and "/a%20b/x").
	Prefix string
	// Handler serves the matched requests (filters included).
	Handler exchange.Handler

	canon string // Prefix as Canonical reads it ("/a%20b" is "/a b"); set by NewTable
}

// Site is a virtual host with its routes.
type Site struct {
	// Name is the site's label in the config; used in logs and metrics.
	Name string
	// Hosts are the names that select the site (name and aliases),
	// compared by host/internal/hostname's rule (case, port and trailing
	// dot aside); "*.example.com" matches any one or more labels before
	// ".example.com".
	Hosts []string
	// Default makes the site answer requests whose Host matches no site.
	Default bool
	// Routes in any order; Table sorts them longest prefix first.
	Routes []*Route
	// NotFound, when set, serves requests for the site that match no
	// route (so that they are logged and counted like the others).
	NotFound exchange.Handler
	// Value is the host's own per-site data (error pages, TLS policy);
	// route never reads it.
	Value any

	routes []*Route // sorted, longest prefix first
}

// Table matches requests of one listener to sites and routes.
type Table struct {
	names *hostname.Table[*Site] // the rule tlsconf's SNI follows too
	def   *Site
}

// NewTable builds a table from sites. The default site is the one marked
// Default, else the first. It fails on a host claimed by two sites.
func NewTable(sites []*Site) (*Table, error) {
	t := &Table{names: hostname.New[*Site]()}
	for _, s := range sites {
		s.routes = append([]*Route(nil), s.Routes...)
		for _, r := range s.routes {
			r.canon = r.Prefix
			if c, err := Canonical([]byte(r.Prefix)); err == nil {
				r.canon = string(c)
			}
		}
		sort.SliceStable(s.routes, func(i, j int) bool {
			return len(s.routes[i].canon) > len(s.routes[j].canon)
		})
		if s.Default {
			if t.def != nil {
				return nil, fmt.Errorf("route: sites %q and %q are both default", t.def.Name, s.Name)
			}
			t.def = s
		}
		for _, h := range s.Hosts {
			if o, ok := t.names.Add(h, s); !ok {
				return nil, fmt.Errorf("route: host %q claimed by sites %q and %q", h, o.Name, s.Name)
			}
		}
	}
	if t.def == nil && len(sites) > 0 {
		t.def = sites[0]
	}
	return t, nil
}

// Site returns the site for a Host header value (or :authority), chosen
// by host/internal/hostname's rule, the one the TLS handshake's server
// name follows too (tlsconf.Table.Lookup); the default site when the
// name selects none. It does not allocate.
func (t *Table) Site(host []byte) *Site {
	if s, ok := t.names.Lookup(host); ok {
		return s
	}
	return t.def
}

// Route returns the route of s for a request path as sent, or nil when no
// route matches or Canonical refuses the path. It is Match of the
// canonical path, computed here.
func (s *Site) Route(raw []byte) *Route {
	p, err := Canonical(raw)
	if err != nil {
		return nil
	}
	return s.Match(p)
}

// Match returns the route of s for p taken literally, a path from
// Canonical, or nil when no route matches. It allocates nothing.
func (s *Site) Match(p []byte) *Route {
	for _, r := range s.routes {
		if hasPrefix(p, r.canon) {
			return r
		}
	}
	return nil
}

// Forwardable reports whether raw, a request path as sent, may go
// upstream in place of canon, its canonical form: raw is RawSafe, and raw
// taken literally (escapes, "%2F" included, not decoded) matches the
// same route of s as canon. Then an upstream that keeps "%2F" inside a
// segment and one that decodes it both see a path of the route that was
// chosen, allowed and filtered.
func (s *Site) Forwardable(raw, canon []byte) bool {
	return RawSafe(raw) && s.Match(raw) == s.Match(canon)
}

// hasPrefix matches on segment boundaries: "/api" matches "/api" and
// "/api/x" but not "/apix"; "/api/" matches "/api/x" and "/api".
func hasPrefix(p []byte, prefix string) bool {
	if len(p) >= len(prefix) {
		if string(p[:len(prefix)]) != prefix {
			return false
		}
		return len(p) == len(prefix) || prefix[len(prefix)-1] == '/' || p[len(prefix)] == '/'
	}
	return len(p) == len(prefix)-1 && prefix[len(prefix)-1] == '/' && string(p) == prefix[:len(prefix)-1]
}
