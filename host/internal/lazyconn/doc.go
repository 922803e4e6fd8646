// Package lazyconn wraps TCP connections so that the per-request
// bookkeeping of an HTTP server and client costs no timer work.
//
// It sits under every TCP connection on the request path: the client
// connections a listener accepts, and the connections the proxy dials to
// its upstreams. fasthttp sets three deadlines per keep-alive request
// (idle, read, write) and the proxy one more per upstream exchange; each
// moves a timer in the Go runtime's heap. A Conn keeps the deadline the
// caller asked for and arms a runtime timer only when the new deadline
// comes before the armed one. A timer that fires before the deadline the
// caller wants is re-armed, and the read or write goes on, so callers see
// a timeout exactly when they asked for it; the timer fires early at most
// once per deadline's length, not once per request. This is nginx's lazy
// timer update, done under net.Conn's API.
//
// WriteWait is for the proxy's side of an exchange: it writes a request
// and waits for the answer without the read(2) that a read right after
// the write makes only to find nothing there yet.
package lazyconn
