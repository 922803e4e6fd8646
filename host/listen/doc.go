// Package listen is one listening address: its socket and the engines
// behind it.
//
// Where it sits on the request path: first. Open binds the TCP socket
// (or takes one inherited from systemd or a replaced sluice) with lazy
// deadlines (host/internal/lazyconn) and a connection count (max_conns,
// limit.go); on a TLS listener the handshake picks the site's
// certificate from Deps.TLS and the engine by ALPN; on an h2c listener
// the first bytes pick it (accept.go). HTTP/1.1 goes to fasthttp behind
// a thin shim (fast.go: fields and framing fasthttp's parser lets
// through, early errors, lingering close; h2c.go: h2c upgrades), HTTP/2
// to host/h2 or net/http (http2_engine), HTTP/3 to quic-go on the same
// port over UDP (h3.go). Every engine wraps the
// request in an exchange.Exchange and calls the one handler it was
// given (Deps.Handler: the server's dispatch to the current
// generation), and renders the errors it returns in one place
// (render.go).
//
// A listener outlives generations. It is given what it needs from above
// as values when it opens (Deps) and imports nothing of the generation
// or the instance; the server (package host) opens, serves, shuts down
// and hands over listeners.
package listen
