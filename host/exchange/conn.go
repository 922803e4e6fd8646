package exchange

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
)

// conn is what the front door (host/frontdoor) decided about the
// connection a request came on: the client's address when a trusted
// proxy named it. Both adapters embed it; RemoteAddr returns client when
// set, so that allow/deny, rate limits, logs and X-Forwarded-For all see
// the same client.
type conn struct {
	client      net.Addr // nil: the peer is the client
	peerTrusted bool
}

func (c *conn) setClient(a net.Addr, peerTrusted bool) { c.client, c.peerTrusted = a, peerTrusted }
func (c *conn) PeerTrusted() bool                      { return c.peerTrusted }

// SetClient records the client's address as decided from a trusted
// proxy's forwarding headers, and whether the peer is such a proxy.
// RemoteAddr returns addr from then on; Peer still returns the peer.
func SetClient(x Exchange, addr net.Addr, peerTrusted bool) {
	if c, ok := x.(interface{ setClient(net.Addr, bool) }); ok {
		c.setClient(addr, peerTrusted)
	}
}

// Peer returns the address of the connection's other end (a load
// balancer, say), whatever the front door decided the client is.
func Peer(x Exchange) net.Addr {
	if p, ok := x.(interface{ Peer() net.Addr }); ok {
		return p.Peer()
	}
	return x.RemoteAddr()
}

// PeerTrusted reports whether the peer is one of the listener's
// trusted_proxies, whose forwarding headers were believed.
func PeerTrusted(x Exchange) bool {
	if p, ok := x.(interface{ PeerTrusted() bool }); ok {
		return p.PeerTrusted()
	}
	return false
}

// TLSState returns the TLS state of the request's connection, or nil
// when it came in the clear.
func TLSState(x Exchange) *tls.ConnectionState {
	if t, ok := x.(interface {
		TLSConnectionState() *tls.ConnectionState
	}); ok {
		return t.TLSConnectionState()
	}
	return nil
}

// ErrBodyTooLarge is returned by a request body reader when the body
// exceeds the listener's max_request_body; handlers answer 413.
var ErrBodyTooLarge = &Error{Status: http.StatusRequestEntityTooLarge, Message: "request body too large"}

// LimitRequestBody makes the request body fail with ErrBodyTooLarge once
// more than n bytes have been read. The front door calls it for bodies of
// unknown length; a declared length over n is refused before.
func LimitRequestBody(x Exchange, n int64) {
	switch l := x.(type) {
	case interface{ limitBody(int64) }:
		l.limitBody(n)
	case interface{ LimitRequestBody(int64) }: // an adapter outside this package
		l.LimitRequestBody(n)
	}
}

func (x *fastExchange) limitBody(n int64) {
	if body := x.ctx.RequestBodyStream(); body != nil {
		x.ctx.Request.SetBodyStream(&limitedBody{r: body, n: n}, -1)
	}
}

func (x *stdExchange) limitBody(n int64) {
	if x.r.Body != nil && x.r.Body != http.NoBody {
		x.r.Body = &limitedBody{r: x.r.Body, n: n}
	}
}

// limitedBody fails a request body that outgrows its limit; it keeps
// none of the byte past it.
type limitedBody struct {
	r io.Reader
	n int64
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.n < 0 {
		return 0, ErrBodyTooLarge
	}
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	n, err := l.r.Read(p)
	if int64(n) > l.n { // one byte past the limit: keep none of it
		n, l.n = int(l.n), -1
		return n, ErrBodyTooLarge
	}
	l.n -= int64(n)
	return n, err
}

func (l *limitedBody) Close() error {
	if c, ok := l.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// CloseConnection makes the response the last on its HTTP/1.x
// connection ("Connection: close"), so that a request whose body was
// refused unread is not followed by its body taken for a next request.
// The fasthttp shim then closes the connection lingering. On HTTP/2 and
// HTTP/3 it does nothing: a stream ends on its own.
func CloseConnection(x Exchange) {
	if c, ok := x.(interface{ closeConnection() }); ok {
		c.closeConnection()
	}
}

func (x *fastExchange) closeConnection() { x.ctx.SetConnectionClose() }

func (x *stdExchange) closeConnection() {
	if x.r.ProtoMajor == 1 {
		x.w.Header().Set("Connection", "close")
	}
}

// ConnectProtocol is the :protocol of an extended CONNECT (RFC 8441 on
// HTTP/2: "websocket", say), nil for any other request. Such a request
// keeps its method, CONNECT, for every policy; a handler that serves it
// answers through Upgrade, where a 2xx status opens the tunnel. Only the
// sluice HTTP/2 engine accepts extended CONNECT.
func ConnectProtocol(x Exchange) []byte {
	if p, ok := x.(interface{ Protocol() []byte }); ok {
		return p.Protocol()
	}
	return nil
}

// Multiplexed reports whether the request came on an HTTP/2 or HTTP/3
// stream, rather than an HTTP/1.x connection (whatever version its
// request line claimed).
func Multiplexed(x Exchange) bool {
	switch m := x.(type) {
	case interface{ multiplexed() bool }:
		return m.multiplexed()
	case interface{ Multiplexed() bool }: // an adapter outside this package
		return m.Multiplexed()
	}
	return false
}

func (x *stdExchange) multiplexed() bool { return x.r.ProtoMajor >= 2 }
