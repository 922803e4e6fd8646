package generation

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/frontdoor"
	_ "github.com/sluicehq/sluice/host/handlers" // every route block config decodes
	"github.com/sluicehq/sluice/host/internal/hostname"
	"github.com/sluicehq/sluice/host/observe"
	"github.com/sluicehq/sluice/host/proxy"
	"github.com/sluicehq/sluice/host/respond"
	"github.com/sluicehq/sluice/host/route"
	"github.com/sluicehq/sluice/host/static"
	"github.com/sluicehq/sluice/runtime"
)

// Deps are the long-lived parts a generation is built with: they outlive
// generations (the Wasm engine, telemetry).
type Deps struct {
	Log *slog.Logger
	// Engine returns the Wasm engine the config's filters compile with;
	// Build calls it only when the config has filters and Filters is nil,
	// and then builds them itself (BuildFilters) into g.Filters.
	Engine func() (*runtime.Engine, error)
	// Filters, when set, builds the filter chain of a route instead (tests
	// put known handlers there). It is given the route's filter names in
	// order.
	Filters func(names []string, next exchange.Handler) (exchange.Handler, error)
	// Proxy, when set, replaces the built-in proxy handler (tests use it
	// to put a known handler behind a proxy route).
	Proxy func(p *proxy.Options, routePath string) (exchange.Handler, func() error, error)
	// Wrap, when set, wraps every route handler (metrics, access log).
	Wrap func(site, route string, h exchange.Handler) exchange.Handler
	// Upstream, when set, returns the metrics handle of one upstream of a
	// proxy route (nil: none).
	Upstream func(route, url string) *observe.Upstream
}

// Build turns a checked config into a generation: one route table per
// listener, every handler constructed. Nothing here runs on the request
// path, and nothing starts: what runs in the background (health checks,
// ACME orders) is in g.Starters, which Server.Apply runs. On error, everything
// built so far is closed.
func Build(cfg *config.Config, d Deps) (_ *Generation, err error) {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	g := &Generation{Tables: map[string]*route.Table{}, Grace: cfg.Server.ShutdownTimeout, Config: cfg}
	if g.Grace <= 0 {
		g.Grace = 30e9
	}
	defer func() {
		if err != nil {
			g.close(d.Log)
		}
	}()
	if err := checkStore(cfg, d.Log); err != nil {
		return nil, err
	}
	if d.Filters == nil && d.Engine != nil {
		filters, closeFilters, err := BuildFilters(cfg, d.Engine, d.Log)
		if err != nil {
			return nil, err
		}
		g.Closers = append(g.Closers, closeFilters)
		g.Filters = filters
		d.Filters = ChainFor(filters)
	}
	sitesByAddr := map[string][]*route.Site{}
	for _, s := range cfg.Sites {
		rs, err := buildSite(cfg, s, d, g)
		if err != nil {
			return nil, err
		}
		for _, addr := range s.Listen {
			sitesByAddr[addr] = append(sitesByAddr[addr], rs)
		}
		if len(s.HTTPSRedirect) > 0 {
			var h exchange.Handler = httpsRedirect(s)
			if d.Wrap != nil { // logged and counted, with an empty route as the site's 404s
				h = d.Wrap(s.Name, "", h)
			}
			red := &route.Site{Name: s.Name, Hosts: rs.Hosts,
				Routes: []*route.Route{{Prefix: "/", Handler: h}}}
			for _, addr := range s.HTTPSRedirect {
				sitesByAddr[addr] = append(sitesByAddr[addr], red)
			}
		}
	}
	for _, l := range cfg.Listeners {
		sites := sitesByAddr[l.Address]
		for _, rs := range sites {
			rs.Default = rs.Name == l.DefaultSite
		}
		t, err := route.NewTable(sites)
		if err != nil {
			return nil, fmt.Errorf("listener %q: %w", l.Address, err)
		}
		g.Tables[l.Address] = t
		g.Listeners = append(g.Listeners, l)
	}
	if err := buildTLS(cfg, g, d.Log); err != nil {
		return nil, err
	}
	g.Doors = make(map[string]*frontdoor.Door, len(cfg.Listeners))
	for _, l := range cfg.Listeners {
		trusted, err := prefixes(l.TrustedProxies)
		if err != nil {
			return nil, fmt.Errorf("listener %q: %w", l.Address, err)
		}
		g.Doors[l.Address] = g.newDoor(l.Address, l.MaxRequestBody, trusted)
	}
	return g, nil
}

func buildSite(cfg *config.Config, s *config.Site, d Deps, g *Generation) (*route.Site, error) {
	rs := &route.Site{Name: s.Name, Hosts: append([]string{s.Name}, s.Aliases...), Default: s.Default}
	if d.Wrap != nil {
		rs.NotFound = d.Wrap(s.Name, "", exchange.HandlerFunc(func(exchange.Exchange) error { return errNotFound }))
	}
	pages, err := loadErrorPages(s.ErrorPages)
	if err != nil {
		return nil, fmt.Errorf("site %q: %w", s.Name, err)
	}
	shared, err := sharedStore(cfg)
	if err != nil {
		return nil, err
	}
	for _, r := range s.Routes {
		h, err := buildRoute(r, d, g)
		if p, ok := h.(*proxy.Handler); ok && err == nil {
			g.Proxies = append(g.Proxies, Proxy{Site: s.Name, Route: r.Path, Handler: p})
		}
		if err == nil {
			h, err = routeStack(r, s, h, d, shared, pages) // stack.go
		}
		if err != nil {
			return nil, fmt.Errorf("site %q: route %q: %w", s.Name, r.Path, err)
		}
		rs.Routes = append(rs.Routes, &route.Route{Prefix: r.Path, Handler: h})
	}
	return rs, nil
}

// buildRoute builds the handler of a route's handler block: each kind
// decodes into its package's options (see host/handlers).
func buildRoute(r *config.Route, d Deps, g *Generation) (exchange.Handler, error) {
	switch o := r.Handler().(type) {
	case *static.Block:
		strip := ""
		if r.Path != "/" {
			strip = strings.TrimSuffix(r.Path, "/")
		}
		h, err := static.New(o.Options(strip))
		if err != nil {
			return nil, err
		}
		g.Closers = append(g.Closers, h.Close)
		return h, nil
	case *proxy.Options:
		if d.Proxy != nil {
			h, closer, err := d.Proxy(o, r.Path)
			if err != nil {
				return nil, err
			}
			if closer != nil {
				g.Closers = append(g.Closers, closer)
			}
			return h, nil
		}
		h, err := newProxy(o, r.Path, d)
		if err != nil {
			return nil, err
		}
		g.Closers = append(g.Closers, h.Close)
		g.Starters = append(g.Starters, h.Start)
		return h, nil
	case *respond.Options:
		return respond.New(o), nil
	}
	return nil, fmt.Errorf("no handler for %q blocks", r.Kind)
}

// httpsRedirect answers plain-HTTP requests for a TLS site with a
// permanent redirect to https, on the site's TLS port, for the same URI.
// As Caddy, it redirects only to a name the site serves: a Host of one
// of its names (or wildcards) keeps that name; any other Host (the site
// reached as the listener's default, an IP address, a name an attacker
// chose) is sent to the site's own name, or gets 404 when that is a
// wildcard, so the redirect can never point at a foreign host.
func httpsRedirect(s *config.Site) exchange.Handler {
	port := ""
	if len(s.Listen) > 0 {
		if i := strings.LastIndexByte(s.Listen[0], ':'); i >= 0 && s.Listen[0][i+1:] != "443" {
			port = s.Listen[0][i:]
		}
	}
	served := hostname.New[bool]()
	for _, n := range append([]string{s.Name}, s.Aliases...) {
		served.Add(n, true)
	}
	fallback := s.Name
	if strings.Contains(fallback, "*") || fallback == "" || fallback == "_" {
		fallback = ""
	}
	return exchange.HandlerFunc(func(x exchange.Exchange) error {
		var buf [hostname.MaxLen]byte
		host, ok := hostname.Fold(&buf, x.Host())
		target := fallback
		if _, known := served.Lookup(x.Host()); ok && known {
			target = string(host)
		}
		if target == "" {
			return errNotFound
		}
		x.SetStatus(http.StatusPermanentRedirect)
		x.SetResponseHeader("Location", "https://"+target+port+string(x.RequestURI()))
		x.SetResponseHeader("Content-Type", "text/plain; charset=utf-8")
		x.SetBody([]byte("redirecting to https\n"))
		return nil
	})
}

// newDoor builds the front door of one listener of g.
func (g *Generation) newDoor(addr string, maxBody int64, trusted []netip.Prefix) *frontdoor.Door {
	d := &frontdoor.Door{Sites: g.Tables[addr], Trusted: trusted, MaxRequestBody: maxBody}
	if g.Config != nil {
		d.Server = g.Config.Server.ServerHeader
	}
	if g.tls != nil {
		d.TLS, d.Strip = g.tls.table(addr), g.tls.strip
	}
	return d
}
