package config

import (
	"cmp"
	"fmt"
	"maps"
	"mime"
	"net"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// siteMeta keeps the source ranges of a site's parts for the checks that
// span sites.
type siteMeta struct {
	names        []nameRef            // the name, then the aliases
	listen       map[string]hcl.Range // address -> its element in listen (or the label for the default)
	redirect     map[string]hcl.Range // address -> its element in https_redirect
	defaultRange hcl.Range            // the `default` attribute, or the label
}

type nameRef struct {
	name string
	rng  hcl.Range
}

// check runs the checks that span blocks: names and defaults per listener,
// TLS and plain sites sharing an address, unused and implicit listeners.
func (d *decoder) check(c *Config) {
	byAddr := map[string]*Listener{}
	for _, l := range c.Listeners {
		byAddr[l.Address] = l
	}
	used := map[string]bool{}
	// listener returns the listener for addr, creating an implicit one.
	listener := func(addr string, rng hcl.Range) *Listener {
		used[addr] = true
		l := byAddr[addr]
		if l == nil {
			l = defaultListener(addr)
			l.Range = rng
			byAddr[addr] = l
			c.Listeners = append(c.Listeners, l)
		}
		return l
	}
	sitesOn := map[*Listener][]*Site{}
	for _, s := range c.Sites {
		m := d.meta[s]
		d.checkOwnNames(s, m)
		for _, addr := range s.Listen {
			l := listener(addr, m.listen[addr])
			l.Sites = append(l.Sites, s.Name)
			sitesOn[l] = append(sitesOn[l], s)
		}
	}
	for _, s := range c.Sites {
		for _, addr := range s.HTTPSRedirect {
			l := listener(addr, d.meta[s].redirect[addr])
			l.Redirects = append(l.Redirects, s.Name)
			if len(sitesOn[l]) > 0 && sitesOn[l][0].TLS != nil {
				d.errorf(d.meta[s].redirect[addr], "Redirect from a TLS address",
					"%q serves TLS (site %q listens there with tls), so it cannot redirect plain HTTP to https.", addr, sitesOn[l][0].Name)
			}
		}
	}
	for _, l := range c.Listeners {
		if !used[l.Address] {
			d.errorf(l.Range, "Unused listener", "No site listens on %q (in listen or https_redirect), so this block has no effect.%s",
				l.Address, didYouMean(l.Address, slices.Collect(maps.Keys(used))))
		}
		if l.Sites == nil {
			l.Sites = []string{}
		}
		if l.Redirects == nil {
			l.Redirects = []string{}
		}
	}
	slices.SortFunc(c.Listeners, func(a, b *Listener) int { return cmp.Compare(a.Address, b.Address) })

	for _, l := range c.Listeners {
		sites := sitesOn[l]
		if len(sites) == 0 {
			continue
		}
		first := sites[0]
		l.TLS = first.TLS != nil
		l.DefaultSite = first.Name
		for _, s := range sites[1:] {
			if (s.TLS != nil) != l.TLS {
				mode := map[bool]string{true: "TLS", false: "plain HTTP"}
				d.errorf(d.meta[s].listen[l.Address], "TLS and plain sites on one address",
					"Site %q serves %s on %q, where site %q (%s) serves %s; an address is either TLS or plain.",
					s.Name, mode[s.TLS != nil], l.Address, first.Name, pos(first.Range), mode[l.TLS])
			}
		}
		if l.TLS && l.H2C && !l.Implicit {
			d.errorf(l.Range, "h2c on a TLS address", "h2c is cleartext HTTP/2; on %q the sites use TLS, where HTTP/2 is negotiated by ALPN.", l.Address)
		}
		var def *Site
		for _, s := range sites {
			if !s.Default {
				continue
			}
			if def != nil {
				d.errorf(d.meta[s].defaultRange, "Two default sites",
					"Sites %q and %q are both the default on %q; the first is at %s.", def.Name, s.Name, l.Address, pos(d.meta[def].defaultRange))
				continue
			}
			def = s
			l.DefaultSite = s.Name
		}
		d.checkSharedNames(l, sites)
	}
	d.checkOverlap(c)
}

// canonicalName folds case and the two spellings of the catch-all.
func canonicalName(n string) string {
	if n == "_" {
		return "*"
	}
	return strings.ToLower(strings.TrimSuffix(n, "."))
}

// checkOwnNames reports a name repeated within one site.
func (d *decoder) checkOwnNames(s *Site, m *siteMeta) {
	seen := map[string]nameRef{}
	for _, n := range m.names {
		k := canonicalName(n.name)
		if first, ok := seen[k]; ok {
			d.errorf(n.rng, "Duplicate site name", "Site %q already answers to %q at %s.", s.Name, first.name, pos(first.rng))
			continue
		}
		seen[k] = n
	}
}

// checkSharedNames reports a name or alias used by two sites on one
// listener. Each pair is reported once, however many listeners they share.
func (d *decoder) checkSharedNames(l *Listener, sites []*Site) {
	if d.reported == nil {
		d.reported = map[string]bool{}
	}
	owner := map[string]*Site{}
	where := map[string]nameRef{}
	for _, s := range sites {
		for _, n := range d.meta[s].names {
			k := canonicalName(n.name)
			first, ok := owner[k]
			if !ok {
				owner[k], where[k] = s, n
				continue
			}
			if first == s {
				continue // reported by checkOwnNames
			}
			key := fmt.Sprintf("%p %p %s", first, s, k)
			if d.reported[key] {
				continue
			}
			d.reported[key] = true
			what := "name"
			if n.name != s.Name || n.rng != s.Range {
				what = "alias"
			}
			d.errorf(n.rng, "Duplicate site "+what,
				"%q is already a name of site %q at %s, which also listens on %q; requests for it could reach only one site.",
				n.name, first.Name, pos(where[k].rng), l.Address)
		}
	}
}

// checkOverlap reports addresses that would collide when bound: the same
// port on the same host, or on a wildcard host and any host.
func (d *decoder) checkOverlap(c *Config) {
	type bound struct {
		addr, what string
		rng        hcl.Range
	}
	var all []bound
	for _, l := range c.Listeners {
		all = append(all, bound{l.Address, "listener", l.Range})
	}
	if c.Admin != nil {
		all = append(all, bound{c.Admin.Listen, "admin listener", c.Admin.Range})
	}
	for i, a := range all {
		for _, b := range all[:i] {
			if a.addr != b.addr && overlaps(a.addr, b.addr) || a.what != b.what && a.addr == b.addr {
				rng := a.rng
				if a.rng.Start.Byte < b.rng.Start.Byte {
					rng = b.rng
				}
				d.errorf(rng, "Conflicting addresses",
					"The %s %q and the %s %q cannot both be bound: they share a port on overlapping hosts.", b.what, b.addr, a.what, a.addr)
			}
		}
	}
}

func overlaps(a, b string) bool {
	ha, pa, err1 := net.SplitHostPort(a)
	hb, pb, err2 := net.SplitHostPort(b)
	if err1 != nil || err2 != nil || pa != pb {
		return false
	}
	wild := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	return ha == hb || wild(ha) || wild(hb)
}

func validMediaType(s string) bool {
	t, _, err := mime.ParseMediaType(s)
	return err == nil && strings.Count(t, "/") == 1 && !strings.HasPrefix(t, "/") && !strings.HasSuffix(t, "/")
}

// validMediaRange accepts a media type or "type/*".
func validMediaRange(s string) bool {
	if main, ok := strings.CutSuffix(s, "/*"); ok {
		return main != "" && !strings.ContainsAny(main, "/* ;")
	}
	return validMediaType(s)
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}
