package generation

import (
	"fmt"
	"log/slog"
	"net/netip"
	"strings"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/gateway"
	"github.com/sluicehq/sluice/host/proxy"
	"github.com/sluicehq/sluice/host/store"
)

// newProxy builds the handler of a `proxy {}` block, which decodes into
// proxy.Options: the route adds its logger and, when d.Upstream is set,
// each upstream's metrics handle; the client spans come from the global
// tracer provider, which telemetry sets.
func newProxy(p *proxy.Options, routePath string, d Deps) (*proxy.Handler, error) {
	log := d.Log
	if log == nil {
		log = slog.Default()
	}
	o := *p
	o.Logger = log.With("route", routePath)
	if up := d.Upstream; up != nil {
		o.Observe = func(url string) proxy.UpstreamObserver {
			if u := up(routePath, url); u != nil {
				return u
			}
			return nil // no metrics: nothing to call per try
		}
	}
	return proxy.New(o)
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
	rl, _ := r.Blocks["rate_limit"].(*gateway.RateLimit)
	if rl != nil {
		c := *rl
		c.Name = site + r.Path // the store's bucket name and the metric's route
		if shared != nil {
			c.Shared = shared
		}
		if lim, err = gateway.NewLimiter(c); err != nil {
			return nil, nil, err
		}
	}
	if lim != nil && rl.Key == "consumer" {
		consumer := lim // the closure must not see lim = nil below
		inner = func(h exchange.Handler) exchange.Handler { return gateway.Wrap(h, consumer, nil) }
		lim = nil
	}
	if acl != nil || lim != nil {
		outer = func(h exchange.Handler) exchange.Handler { return gateway.Wrap(h, lim, acl) }
	}
	return inner, outer, nil
}
