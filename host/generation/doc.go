// Package generation turns a checked config into a generation:
// everything one config load builds, off the request path.
//
// Build makes, for every listener of the config, its front door
// (host/frontdoor: the request policy, the site by authority, its TLS
// policy) and its route table (host/route), and for every route its
// stack (stack.go: routeStack lists it outermost first, and host/doc.go
// quotes it): Deps.Wrap (telemetry), the site's error pages, the
// route's allow/deny list and rate limit (host/gateway, counting in
// host/store when shared), its Wasm filters (host/chain, built by
// BuildFilters and ChainFor), a rate limit keyed by consumer, and the
// native handler (host/static, host/proxy, respond). Each
// TLS listener gets its certificates and policies (host/tlsconf). What
// runs in the background (health checks, ACME orders) is collected in
// Starters and started only when the generation goes in; Closers undo
// the rest. Validate builds the same parts and closes them again, for
// `sluice validate`; ValidateFilters does so for the filters.
//
// Where it sits on the request path: after the listener's engine and
// the server's one atomic load of the current generation (package
// host), Generation.Serve is the rest of the way: the front door → the
// one canonical path (path.go) → route by longest prefix → the route's
// handler. Errors go back to the engine, which renders them
// (host/listen).
//
// What it imports of host is drawn in host/README.md; outside host,
// config and runtime. It knows nothing of listeners or of the instance
// that swaps generations in: whatever
// outlives a generation (the Wasm engine, telemetry) comes in through
// Deps (Deps.Engine, Deps.Wrap, Deps.Upstream).
package generation
