package generation

import (
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/frontdoor"
	"github.com/sluicehq/sluice/host/proxy"
	"github.com/sluicehq/sluice/host/route"
	"github.com/sluicehq/sluice/host/tlsconf"
	"github.com/sluicehq/sluice/runtime"
)

// Generation is everything one config load built: a route table per
// listener and what must be closed when the generation retires.
type Generation struct {
	// Tables maps a configured listen address to its sites and routes.
	Tables map[string]*route.Table
	// Listeners lists the listening addresses and their settings.
	Listeners []*config.Listener
	// Grace bounds how long a retired generation waits for its requests.
	Grace time.Duration
	// Starters start what the generation's handlers run in the background
	// (proxy health checks, ACME sites obtaining certificates); Start runs
	// them, just before the generation is swapped in, so a generation that
	// is built and closed without serving (a refused reload, `sluice
	// validate`) never starts anything.
	Starters []func()
	// Closers are closed, in order, once the generation has drained.
	Closers []func() error
	// Config is the config the generation was built from (nil for one
	// made by hand).
	Config *config.Config
	// Filters are the generation's Wasm filters by name.
	Filters map[string]*runtime.Filter
	// Doors maps a configured listen address to its front door: the
	// request policy every engine of the listener applies.
	Doors map[string]*frontdoor.Door
	// Proxies are the generation's built-in proxy handlers, in config
	// order, for the admin's upstream state (read only).
	Proxies []Proxy

	tls      *tlsGen // certificates and TLS policies per listener (tls.go); nil without TLS
	inflight atomic.Int64
}

// Proxy is the proxy handler of one route.
type Proxy struct {
	Site, Route string
	Handler     *proxy.Handler
}

// Start runs g's starters (see Starters).
func (g *Generation) Start() {
	for _, start := range g.Starters {
		start()
	}
}

// Close closes what g built (see Closers), logging the errors.
func (g *Generation) Close(log *slog.Logger) { g.close(log) }

func (g *Generation) close(log *slog.Logger) {
	for _, c := range g.Closers {
		if err := c(); err != nil {
			log.Warn("closing generation", "error", err)
		}
	}
}

// InFlight is the number of requests g is serving now.
func (g *Generation) InFlight() int64 { return g.inflight.Load() }

// DefaultDoors gives every listener of g that has no front door one
// without trusted proxies: a generation not made by Build (tests make
// them by hand).
func (g *Generation) DefaultDoors() {
	if g.Doors == nil {
		g.Doors = make(map[string]*frontdoor.Door, len(g.Listeners))
	}
	for _, l := range g.Listeners {
		if g.Doors[l.Address] == nil {
			g.Doors[l.Address] = g.newDoor(l.Address, l.MaxRequestBody, nil)
		}
	}
}

// Serve is the generation's part of the request path, for a request
// that arrived on the listener configured as addr (its HTTP/3
// announcement altSvc, or ""): the listener's front door (policy,
// site) → the canonical path → route by path → the route's handler
// (filters, then the native handler).
func (g *Generation) Serve(x exchange.Exchange, addr, altSvc string) error {
	g.inflight.Add(1)
	defer g.inflight.Add(-1)
	d := g.Doors[addr]
	if d == nil {
		return errNotFound
	}
	return d.Serve(x, altSvc, func(site *route.Site) error {
		p, err := canonicalPath(x, site) // path.go
		if err != nil {
			return err
		}
		r := site.Match(p)
		if r == nil {
			if site.NotFound != nil {
				return site.NotFound.ServeExchange(x)
			}
			return errNotFound
		}
		return r.Handler.ServeExchange(x)
	})
}

var errNotFound = exchange.Errorf(http.StatusNotFound, "not found")

// TLSTable returns the certificates and TLS policies of the listener
// configured as addr, or nil when it has none.
func (g *Generation) TLSTable(addr string) *tlsconf.Table { return g.tls.table(addr) }

// Certificates lists the certificates g serves, on all its TLS
// listeners (file and ACME certificates).
func (g *Generation) Certificates() []tlsconf.Certificate {
	if g.tls == nil {
		return nil
	}
	var certs []tlsconf.Certificate
	for _, tb := range g.tls.tables {
		certs = append(certs, tb.Certificates()...)
	}
	return certs
}
