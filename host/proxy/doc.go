// Package proxy is sluice's native reverse proxy: the handler a route's
// proxy block becomes. It picks an upstream with a load-balancing policy,
// forwards the request, relays the response (streamed by default), retries
// what can safely be retried, and keeps track of upstream health, actively
// (periodic checks) and passively (ejecting upstreams that keep failing).
//
// Where it sits on the request path: it is a native handler, the last step
// of a route, after the request filters and the gateway (rate limits,
// allow/deny) and before the response filters, which read and may replace
// what it produced. It is written against exchange.Exchange, so it runs
// unchanged behind every engine (fasthttp for HTTP/1.1, host/h2 or
// net/http for HTTP/2, quic-go for HTTP/3), and it returns *exchange.Error (502, 503, 504, 413) for the host to
// render; the messages it gives clients never name an upstream.
//
// The fast path: HTTP/1.1 upstreams are reached through a fasthttp
// HostClient per upstream (pooled keep-alive connections) driven by this
// package's own round trip (h1.go: a try is one checkout and one done,
// whatever the path): the request head is built as bytes (head.go),
// a bodyless request goes out from inside the wait for its answer
// (lazyconn.WriteWait), a small response costs no allocation and a large
// or open-ended one streams to the client without a goroutine of its own
// (exchange.SendReader). HTTP/2 upstreams (h2c://, gRPC, https
// with Options.HTTP2) go through golang.org/x/net/http2, which carries
// trailers. WebSocket and other upgrades are relayed byte for byte;
// a WebSocket over HTTP/2 (extended CONNECT, RFC 8441) goes up as an
// HTTP/1.1 upgrade (upgrade.go).
//
// Layout: balance policies live in internal/balance, health checking in
// internal/health, the client-address logic shared with the gateway in
// forwarded.
//
// The `proxy {}` block of a config is this package's own: Options is its
// schema (hcl tags), Defaults its defaults, DecodeHCL (block.go) its checks
// with source positions, and the doc tags its reference rows in
// config/CONFIG.md; block.go registers it with config.RegisterHandler, so
// a decoded block reaches New as it is.
//
// What it imports is drawn in host/README.md (TestHouseDrawing keeps the
// drawing true, TestLayers the layering): config too, to register its
// block (config imports nothing of the host), and never runtime.
package proxy
