package generation

import (
	"fmt"
	"os"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/gateway"
	"github.com/sluicehq/sluice/host/store"
)

// A layer is one stage of a route's stack: it wraps the rest of the
// stack (next). routeStack's list holds nil for a stage the route does
// not have.
type layer func(next exchange.Handler) (exchange.Handler, error)

// routeStack is a route's handler behind its stages, in the order a
// request meets them, outermost first (host/doc.go quotes this list):
//
//	observe         metrics, the server span, the access log (Deps.Wrap)
//	error pages     the site's page for an error's status (rendered by host/listen)
//	allow/deny      the route's ACL
//	rate limit      keyed by address or header
//	filters         the route's Wasm filters, in declared order
//	rate limit      keyed by consumer, which a filter sets
//	handler         static, proxy or respond
//
// It is folded once, here, from the handler outwards.
func routeStack(r *config.Route, s *config.Site, h exchange.Handler, d Deps, shared *store.Store, pages map[int][]byte) (exchange.Handler, error) {
	acl, lim, consumer, err := gatewayFor(r, shared, s.Name) // natives.go
	if err != nil {
		return nil, err
	}
	layers := [...]layer{
		observeLayer(d.Wrap, s.Name, r.Path),
		errorPagesLayer(pages),
		aclLayer(acl),
		limitLayer(lim, !consumer),
		filtersLayer(d.Filters, r.Filters),
		limitLayer(lim, consumer),
	}
	for i := len(layers) - 1; i >= 0; i-- {
		if layers[i] == nil {
			continue
		}
		if h, err = layers[i](h); err != nil {
			return nil, err
		}
	}
	return h, nil
}

func observeLayer(wrap func(site, route string, h exchange.Handler) exchange.Handler, site, route string) layer {
	if wrap == nil {
		return nil
	}
	return func(next exchange.Handler) (exchange.Handler, error) { return wrap(site, route, next), nil }
}

func errorPagesLayer(pages map[int][]byte) layer {
	if len(pages) == 0 {
		return nil
	}
	return func(next exchange.Handler) (exchange.Handler, error) {
		return errorPages{next: next, pages: pages}, nil
	}
}

func aclLayer(acl *gateway.ACL) layer {
	if acl == nil {
		return nil
	}
	return func(next exchange.Handler) (exchange.Handler, error) { return gateway.Wrap(next, nil, acl), nil }
}

// limitLayer is the rate limit's stage, at the place here says it goes:
// lim is one route's one limit, in one of the two places of the list.
func limitLayer(lim *gateway.Limiter, here bool) layer {
	if lim == nil || !here {
		return nil
	}
	return func(next exchange.Handler) (exchange.Handler, error) { return gateway.Wrap(next, lim, nil), nil }
}

func filtersLayer(chain func(names []string, next exchange.Handler) (exchange.Handler, error), names []string) layer {
	if len(names) == 0 {
		return nil
	}
	if chain == nil {
		return func(exchange.Handler) (exchange.Handler, error) {
			return nil, fmt.Errorf("filters are not available")
		}
	}
	return func(next exchange.Handler) (exchange.Handler, error) { return chain(names, next) }
}

// errorPages answers an error whose status has a page of the site's with
// that page: it hands the error on with the page attached (pageError),
// and host/listen renders it like every other error, so the cause is
// logged, a 400 or 413 closes the connection and nothing of the failed
// response's own headers stays.
type errorPages struct {
	next  exchange.Handler
	pages map[int][]byte
}

func (e errorPages) ServeExchange(x exchange.Exchange) error {
	err := e.next.ServeExchange(x)
	if err == nil {
		return nil
	}
	if page, ok := e.pages[exchange.StatusOf(err)]; ok {
		return &pageError{err: err, page: page}
	}
	return err
}

// pageError is an error with the site's page for its status. The error
// renderer (host/listen: render.go) finds its ErrorPage method by an
// interface of its own, so neither package imports the other.
type pageError struct {
	err  error
	page []byte
}

func (e *pageError) Error() string { return e.err.Error() }
func (e *pageError) Unwrap() error { return e.err }

// ErrorPage returns the page's media type and body.
func (e *pageError) ErrorPage() (contentType string, body []byte) {
	return "text/html; charset=utf-8", e.page
}

func loadErrorPages(files map[int]string) (map[int][]byte, error) {
	pages := make(map[int][]byte, len(files))
	for code, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("error page %d: %w", code, err)
		}
		pages[code] = b
	}
	return pages, nil
}
