package generation

import (
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"strings"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/gateway"
	"github.com/sluicehq/sluice/host/proxy"
	"github.com/sluicehq/sluice/host/store"
)

// newProxy maps a `proxy {}` block onto the proxy handler. d.Upstream,
// when set, gets each upstream's metrics handle; the client spans come
// from the global tracer provider, which telemetry sets.
func newProxy(p *config.Proxy, routePath string, d Deps) (*proxy.Handler, error) {
	log := d.Log
	if log == nil {
		log = slog.Default()
	}
	o := proxy.Options{
		Balance:               p.Balance,
		HashHeader:            p.HashHeader,
		Cookie:                p.Cookie,
		Timeout:               p.Timeout,
		DialTimeout:           p.DialTimeout,
		TLSHandshakeTimeout:   p.TLSHandshakeTimeout,
		ResponseHeaderTimeout: p.ResponseHeaderTimeout,
		IdleTimeout:           p.IdleTimeout,
		MaxIdleConns:          p.MaxIdleConns,
		MaxConns:              p.MaxConns,
		Tries:                 p.Tries,
		TryDuration:           p.TryDuration,
		Buffering:             p.Buffering,
		HTTP2:                 p.HTTP2,
		MaxBody:               p.MaxBody,
		StripPrefix:           p.StripPrefix,
		HostHeader:            p.HostHeader,
		HeaderUp:              headerOps(p.HeaderUp),
		HeaderDown:            headerOps(p.HeaderDown),
		Logger:                log.With("route", routePath),
	}
	if up := d.Upstream; up != nil {
		o.Observe = func(url string) proxy.UpstreamObserver {
			if u := up(routePath, url); u != nil {
				return u
			}
			return nil // no metrics: nothing to call per try
		}
	}
	if hh := p.HostHeader; hh != "" && hh != "upstream" && hh != "keep" {
		o.HostHeader, o.HeaderUp.Set = "", literalHost(o.HeaderUp.Set, hh)
	}
	for _, u := range p.Upstreams {
		o.Upstreams = append(o.Upstreams, proxy.Upstream{URL: u.URL, Weight: u.Weight})
	}
	if h := p.Health; h != nil {
		o.Health = &proxy.HealthCheck{Path: h.Path, Interval: h.Interval, Timeout: h.Timeout,
			ExpectStatus: h.ExpectStatus, Rise: h.Rise, Fall: h.Fall}
	}
	if ps := p.Passive; ps != nil {
		o.Passive = &proxy.Passive{MaxFails: ps.MaxFails, CoolDown: ps.FailTimeout}
		if ps.MaxFails == 0 { // "max_fails = 0" turns passive checks off
			o.Passive.MaxFails = -1
		}
	}
	if t := p.TLS; t != nil {
		o.TLS = &proxy.TLSOptions{CAFile: t.CA, ServerName: t.ServerName, CertFile: t.Cert,
			KeyFile: t.Key, InsecureSkipVerify: t.InsecureSkipVerify}
	}
	var err error
	if o.TrustedProxies, err = prefixes(p.TrustedProxies); err != nil {
		return nil, err
	}
	return proxy.New(o)
}

// literalHost is a header_up set map that sends the literal host_header
// name as Host (the proxy sends a Host set by header_up as it is), unless
// header_up sets Host itself. set is not modified.
func literalHost(set map[string]string, name string) map[string]string {
	for k := range set {
		if http.CanonicalHeaderKey(k) == "Host" {
			return set
		}
	}
	out := maps.Clone(set)
	if out == nil {
		out = map[string]string{}
	}
	out["Host"] = name
	return out
}

func headerOps(h *config.HeaderOps) proxy.HeaderOps {
	if h == nil {
		return proxy.HeaderOps{}
	}
	return proxy.HeaderOps{Set: h.Set, Add: h.Add, Remove: h.Remove}
}

// prefixes parses IP addresses and CIDR prefixes (checked by config).
func prefixes(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q: %w", s, err)
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: %w", s, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// gatewayFor wraps a route's handler with its allow/deny list and rate
// limit. ACLs and address-keyed limits run before the filters; a limit
// keyed by "consumer" runs after them, since an auth filter sets the
// consumer. inner wraps the native handler, outer the whole chain.
// With a shared store, the limit counts there, across every instance,
// under the name "site/route".
func gatewayFor(r *config.Route, shared *store.Store, site string) (inner, outer func(exchange.Handler) exchange.Handler, err error) {
	id := func(h exchange.Handler) exchange.Handler { return h }
	inner, outer = id, id
	var acl *gateway.ACL
	if len(r.Allow) > 0 || len(r.Deny) > 0 {
		if acl, err = gateway.NewACL(r.Allow, r.Deny); err != nil {
			return nil, nil, err
		}
	}
	var lim *gateway.Limiter
	if rl := r.RateLimit; rl != nil {
		c := gateway.RateLimit{Rate: rl.Rate, Burst: rl.Burst, Key: rl.Key, MaxKeys: rl.MaxKeys}
		if shared != nil {
			c.Shared, c.Name, c.DenyOnError = shared, site+r.Path, rl.OnStoreError == "deny"
		}
		if lim, err = gateway.NewLimiter(c); err != nil {
			return nil, nil, err
		}
	}
	if lim != nil && r.RateLimit.Key == "consumer" {
		consumer := lim // the closure must not see lim = nil below
		inner = func(h exchange.Handler) exchange.Handler { return gateway.Wrap(h, consumer, nil) }
		lim = nil
	}
	if acl != nil || lim != nil {
		outer = func(h exchange.Handler) exchange.Handler { return gateway.Wrap(h, lim, acl) }
	}
	return inner, outer, nil
}
