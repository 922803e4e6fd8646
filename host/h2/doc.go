// Package h2 is sluice's own HTTP/2 server engine (RFC 9113): it serves
// the connections a listener sorted to HTTP/2 (TLS with ALPN "h2", or a
// cleartext connection that opened with the HTTP/2 preface) and hands
// each request to the same exchange.Handler as the fasthttp engine, with
// no net/http in between.
//
// Where it sits on the request path: listener (host/listen) → this
// engine (frames, HPACK, streams, flow control; the stream's state in
// stream.go) → its Exchange adapter (exchange.go) → the host's dispatch
// (front door, routing, filters, the native handler) → the response,
// committed after the handler returns as HEADERS and DATA frames.
//
// One goroutine reads a connection's frames. A request that arrives
// complete (END_STREAM on its HEADERS) is handled inline on that
// goroutine; one with a body, or whose handler says it will wait on
// something other than the client (exchange.WillBlock: the proxy), runs
// on a goroutine of its own, at most one per open stream (host/RATIONALE.md,
// "Why does the HTTP/2 engine run handlers inline?"). Frames of every
// stream are appended to one buffer and written with one write per turn
// of the read loop.
//
// An extended CONNECT (RFC 8441, advertised with
// SETTINGS_ENABLE_CONNECT_PROTOCOL) reaches handlers with method CONNECT
// and its :protocol (exchange.ConnectProtocol); a handler that supports
// it (the proxy, for WebSockets) takes the stream with Upgrade, which
// answers and hands it over as a net.Conn (tunnel.go). A 2xx answer not
// given through Upgrade becomes 501 (host/RATIONALE.md, "Why are
// WebSockets over HTTP/2 a CONNECT that keeps its method?").
//
// A request is checked as strictly as x/net/http2's server checks it
// (RFC 9113, 8.2 and 8.3; headers.go, validRequest), pseudo-header values
// before they are kept: a malformed one is reset with PROTOCOL_ERROR
// before any handler runs, and FuzzDifferentialStd holds the two servers
// to the same answers. Frames that cost the client nothing (PING,
// SETTINGS, empty DATA, DATA on closed streams, resets) each have a
// budget per connection (Options.MaxControl, MaxResets).
//
// Framing uses golang.org/x/net/http2's frame header reader, types and
// constants and golang.org/x/net/http2/hpack; the payload parsing is
// here, so that no frame is allocated.
package h2
