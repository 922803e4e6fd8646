package generation

import (
	"fmt"
	"log/slog"
	"net/netip"
	"strings"

	"github.com/sluicehq/sluice/config"
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

// gatewayFor builds a route's allow/deny list and rate limit, each nil
// when the route has none, and reports whether the limit is keyed by
// "consumer": that one runs after the filters, since an auth filter
// sets the consumer (routeStack). With a shared store, the limit counts
// there, across every instance, under the name "site/route".
func gatewayFor(r *config.Route, shared *store.Store, site string) (acl *gateway.ACL, lim *gateway.Limiter, consumer bool, err error) {
	if len(r.Allow) > 0 || len(r.Deny) > 0 {
		if acl, err = gateway.NewACL(r.Allow, r.Deny); err != nil {
			return nil, nil, false, err
		}
	}
	rl, _ := r.Blocks["rate_limit"].(*gateway.RateLimit)
	if rl == nil {
		return acl, nil, false, nil
	}
	c := *rl
	c.Name = site + r.Path // the store's bucket name and the metric's route
	if shared != nil {
		c.Shared = shared
	}
	if lim, err = gateway.NewLimiter(c); err != nil {
		return nil, nil, false, err
	}
	return acl, lim, rl.Key == "consumer", nil
}
