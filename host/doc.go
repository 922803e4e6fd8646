// Package host is sluice's HTTP side, and this package is its running
// instance: Start, Instance (reload, upgrade, shutdown), Server (the
// listeners and the current generation), telemetry and the admin API.
// Turning a config into handlers is host/generation's job; sockets and
// engines are host/listen's. README.md draws the packages and their
// imports; RATIONALE.md says why they are split so.
//
// The request path, in the order a request meets it (folder in brackets):
//
//	listener, every TCP connection with lazy deadlines
//	                                           [host/listen, host/internal/lazyconn]
//	  → TLS, SNI picks the site's certificate; ALPN picks the engine
//	                                           [host/listen, host/tlsconf]
//	  → engine: fasthttp for HTTP/1.1, sluice's own for HTTP/2 [host/h2]
//	    (or net/http: http2_engine), quic-go for HTTP/3, all
//	    wrapped in one exchange.Exchange       [host/listen, host/exchange]
//	  → current generation, one atomic load    (server.go: dispatch)
//	  → the front door, the same for every engine: HTTP version, the
//	    authority (absolute-form replaces Host), client address
//	    (trusted_proxies), identity headers, body limit, site by
//	    authority and its TLS policy (mTLS: 421), HSTS, Alt-Svc
//	                                           [host/generation → host/frontdoor]
//	  → the one canonical path (decoded once, dot segments resolved;
//	    malformed is 400), which every later stage sees
//	                                           [host/generation, host/route]
//	  → route by longest path prefix           [host/route]
//	  → the route's stack, outermost first, as host/generation's
//	    routeStack lists it (stack.go):
//	    observe         metrics, the server span, the access log
//	                                           [host/observe]
//	    error pages     the site's page for an error's status
//	    allow/deny      the route's ACL        [host/gateway]
//	    rate limit      keyed by address or header
//	                                           [host/gateway, host/store]
//	    filters         the route's Wasm filters, in declared order
//	                    (request phase in that order, response phase
//	                    in reverse)            [host/chain → runtime]
//	    rate limit      keyed by consumer, which a filter sets, so it
//	                    runs after the filters [host/gateway, host/store]
//	    handler         static, proxy or respond
//	                                           [host/static, host/proxy, host/respond]
//	    (a rate limit with a store counts in Redis, shared by every
//	    instance, after a local allowance per key)
//	  → errors rendered in one place, custom error pages too: the cause
//	    logged, the connection's fate decided [host/listen: render.go]
//
// Around it: the admin API (/metrics, /healthz, /readyz, /config,
// /filters, POST /reload, POST /upgrade) in host/admin, wired with
// telemetry in telemetry.go; sockets inherited from systemd or handed
// to a new binary by an upgrade (upgrade.go), and sd_notify, in
// host/handover.
//
// A generation (host/generation) is everything one config load builds:
// route tables per listener and every handler with its caches, pools
// and upstream connections, and the generation's Wasm filters. It is
// built off the request path, swapped in through one atomic pointer
// (Server.Apply), and closed once its in-flight requests finish.
// Listeners (host/listen) outlive generations. Nothing on the request
// path parses HCL, opens a config file, compiles Wasm or takes a lock on
// shared config.
//
// host imports config (to load configs) and runtime (the Wasm engine
// that outlives generations); runtime and config import nothing of
// host.
package host
