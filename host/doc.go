// Package host is sluice's HTTP side: listeners, engines, sites and
// routes, the native handlers, the filter chain, and reloads.
//
// The request path, in the order a request meets it (folder in brackets):
//
//	listener (listener.go), every TCP connection with lazy deadlines
//	                                                 [host/internal/lazyconn]
//	  → TLS, SNI picks the site's certificate; ALPN picks the engine
//	                                                 [host/tlsconf, tls.go]
//	  → engine: fasthttp for HTTP/1.1, sluice's own for HTTP/2 [host/h2]
//	    (or net/http: http2_engine), quic-go for HTTP/3 (h3.go), all
//	    wrapped in one exchange.Exchange               [host/exchange]
//	  → current generation, one atomic load          (server.go: dispatch)
//	  → the front door, the same for every engine: HTTP version, the
//	    authority (absolute-form replaces Host), client address
//	    (trusted_proxies), identity headers, body limit, site by
//	    authority and its TLS policy (mTLS: 421), HSTS, Alt-Svc
//	                                                 [host/frontdoor]
//	  → the one canonical path (decoded once, dot segments resolved;
//	    malformed is 400), which every later stage sees
//	                                                 (path.go, [host/route])
//	  → route by longest path prefix                 [host/route]
//	  → allow/deny, rate limit                       [host/gateway]
//	    (with a store: counted in Redis, shared by every instance,
//	    after a local allowance per key)             [host/store]
//	  → request filters in declared order (Wasm)     [host/chain → runtime]
//	  → native handler: static files or proxy        [host/static, host/proxy]
//	  → response filters in reverse order            [host/chain]
//	  → errors rendered in one place                 (server.go: renderError)
//	  → access log, metrics, the server span         [host/observe]
//
// Around it: the admin API (/metrics, /healthz, /readyz, /config,
// /filters, POST /reload, POST /upgrade) in host/admin, wired with
// telemetry in telemetry.go; the Wasm filters of a generation in
// filters.go; sockets inherited from systemd or handed to a new binary
// by an upgrade (upgrade.go), and sd_notify, in host/handover.
//
// A generation (build.go) is everything one config load builds: route
// tables per listener and every handler with its caches, pools and
// upstream connections. It is built off the request path, swapped in
// through one atomic pointer (Server.Apply), and closed once its
// in-flight requests finish. Listeners outlive generations. Nothing on
// the request path parses HCL, opens a config file, compiles Wasm or
// takes a lock on shared config.
//
// host imports config (to build generations) and runtime (to run
// filters); runtime and config import nothing of host.
package host
