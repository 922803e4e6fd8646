package admin

import (
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// origins is what the admin API accepts as the Host of a request and the
// host of its Origin: the listener's address as configured and as bound,
// and the loopback names (localhost, 127.0.0.1, ::1), each with the
// listener's port. A page elsewhere reaches the API through a browser
// only with a name of its own (DNS rebinding) or with its own Origin
// (cross-site requests), so both are refused.
type origins struct {
	hosts map[string]bool // lower case, no brackets, no trailing dot
	ports map[string]bool // empty before a port-0 listener is bound: any
	anyIP bool            // bound to 0.0.0.0 or ::: any IP literal names the listener
}

// newOrigins computes the accepted names from the configured listen
// address and the bound one (nil before Start).
func newOrigins(listen string, bound net.Addr) origins {
	o := origins{hosts: map[string]bool{}, ports: map[string]bool{}}
	add := func(hostport string) {
		h, p, err := net.SplitHostPort(hostport)
		if err != nil {
			return
		}
		if p != "0" {
			o.ports[p] = true
		}
		h = normHost(h)
		if ip, err := netip.ParseAddr(h); err == nil && ip.IsUnspecified() || h == "" {
			o.anyIP = true
			return
		}
		o.hosts[h] = true
	}
	add(listen)
	if bound != nil {
		add(bound.String())
	}
	return o
}

// normHost lower-cases a host and drops IPv6 brackets, an IPv6 zone and
// a trailing dot.
func normHost(h string) string {
	h = strings.ToLower(strings.TrimSuffix(strings.Trim(h, "[]"), "."))
	if ip, err := netip.ParseAddr(h); err == nil {
		return ip.WithZone("").Unmap().String()
	}
	return h
}

// match reports whether hostport, as sent in a Host header or an
// Origin, names this listener; defPort is the port a hostport without
// one means.
func (o origins) match(hostport, defPort string) bool {
	h, p := hostport, defPort
	if sh, sp, err := net.SplitHostPort(hostport); err == nil {
		h, p = sh, sp
	} else if strings.Count(hostport, ":") > 1 && !strings.HasPrefix(hostport, "[") {
		return false // a bare IPv6 address is not a valid Host
	}
	if len(o.ports) > 0 && !o.ports[p] {
		return false
	}
	h = normHost(h)
	if o.hosts[h] {
		return true
	}
	// Loopback names are safe whatever the listener: a page elsewhere
	// cannot make a browser send them. "" is a client dialing ":PORT".
	ip, err := netip.ParseAddr(h)
	switch {
	case err != nil:
		return h == "localhost" || h == ""
	case ip.IsLoopback():
		return true
	}
	return o.anyIP
}

// host reports whether a request's Host is accepted. An absent Host
// (HTTP/1.0) is no browser's and passes.
func (o origins) host(h string) bool {
	return h == "" || o.match(h, "80")
}

// origin reports whether the Origin header values are all accepted:
// http or https URLs of the listener's names. "null" (a sandboxed or
// file: page) is refused.
func (o origins) origin(values []string) bool {
	for _, v := range values {
		u, err := url.Parse(strings.TrimSpace(v))
		if err != nil || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") {
			return false
		}
		var def string
		switch strings.ToLower(u.Scheme) {
		case "http":
			def = "80"
		case "https":
			def = "443"
		default:
			return false
		}
		if !o.match(u.Host, def) {
			return false
		}
	}
	return len(values) > 0
}
