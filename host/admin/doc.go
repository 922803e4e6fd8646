// Package admin is sluice's admin HTTP API: /healthz, /readyz, /metrics,
// /config, /filters, /status, /upstreams, the status page at /, POST
// /reload and POST /upgrade, on a listener of its own (loopback by
// default), optionally behind a bearer token (which a browser sends as
// the password of Basic credentials).
//
// Every request must name the listener (origin.go): a Host that is not
// the listener's address, as configured or as bound, or a loopback name
// with its port, is refused with 403, and so is an Origin that is not
// one of those; an absent Origin (curl, `sluice reload`) passes. That
// shuts out DNS rebinding and cross-site requests from a browser, as
// Caddy's admin API does.
//
// Where it sits: beside the request path, not on it. It is a plain
// net/http server; what it reports comes from functions the host gives it
// (the running config, the filter pools, readiness, a reload), so it
// holds no state of its own and survives reloads unchanged.
//
// admin imports only the standard library and its own status package
// (the JSON shapes and the embedded page); it must not import runtime,
// config or host (host imports admin).
package admin
