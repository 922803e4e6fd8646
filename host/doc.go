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
//	  → allow/deny, rate limit                 [host/gateway]
//	    (with a store: counted in Redis, shared by every instance,
//	    after a local allowance per key)       [host/store]
//	  → request filters in declared order (Wasm) [host/chain → runtime]
//	  → native handler: static files or proxy  [host/static, host/proxy]
//	  → response filters in reverse order      [host/chain]
//	  → errors rendered in one place           [host/listen: render.go]
//	  → access log, metrics, the server span   [host/observe]
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
