package frontdoor

import (
	"bytes"
	"net"
	"net/http"
	"net/netip"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/proxy/forwarded"
	"github.com/sluicehq/sluice/host/route"
	"github.com/sluicehq/sluice/host/tlsconf"
)

// Door is one listener's request policy in one generation. It is built
// off the request path with the generation and is read-only afterwards.
type Door struct {
	// Sites are the listener's sites: the one table that picks a site
	// for routing and, through the site's name, for its TLS policy.
	Sites *route.Table
	// TLS holds the TLS policies of the sites of a TLS listener; nil on a
	// plain listener.
	TLS *tlsconf.Table
	// Strip lists the client-identity header names of every site of the
	// generation: no client may send them.
	Strip []string
	// Trusted are the peers whose X-Forwarded-For or Forwarded names the
	// client (the listener's trusted_proxies).
	Trusted []netip.Prefix
	// MaxRequestBody bounds request bodies (413); 0 means no limit.
	MaxRequestBody int64
	// Server is the Server response field of every response the door
	// sees (server_header), set before anything else runs so that a
	// handler's own (an upstream's, a header_down's, a filter's) replaces
	// it and a filter can remove it; "" means none. One place for every
	// engine: fasthttp, net/http, host/h2 and HTTP/3 add none of their own.
	Server string
}

// Errors the door answers with. Messages are safe for clients.
var (
	ErrVersion     = exchange.Errorf(http.StatusHTTPVersionNotSupported, "http version not supported")
	ErrBadTarget   = exchange.Errorf(http.StatusBadRequest, "bad request: malformed request target")
	ErrBadHost     = exchange.Errorf(http.StatusBadRequest, "bad request: malformed or missing host")
	ErrConnect     = exchange.Errorf(http.StatusBadRequest, "bad request: not a proxy")
	ErrMisdirected = exchange.Errorf(http.StatusMisdirectedRequest, "misdirected request: this host needs its own TLS connection")
	ErrNoSite      = exchange.Errorf(http.StatusNotFound, "not found")
)

const (
	hstsHeader   = "Strict-Transport-Security"
	altSvcHeader = "Alt-Svc"
	realIPHeader = "X-Real-IP"
	serverHeader = "Server"
)

var challengePrefix = []byte(tlsconf.ChallengePrefix)

// Serve applies the policy to x and, when the request may go on, calls
// next with the site it is for; its error is returned as is. altSvc is
// the listener's HTTP/3 announcement ("" for none). Errors are
// *exchange.Error values with the status to answer.
func (d *Door) Serve(x exchange.Exchange, altSvc string, next func(*route.Site) error) error {
	if d.Server != "" {
		x.SetResponseHeader(serverHeader, d.Server)
	}
	if err := d.admit(x); err != nil {
		return err
	}
	if d.Sites == nil {
		return ErrNoSite
	}
	site := d.Sites.Site(x.Host())
	if site == nil {
		return ErrNoSite
	}
	if !x.IsTLS() {
		if answered := acmeChallenge(x); answered {
			return nil
		}
		return next(site)
	}
	p, err := d.tlsPolicy(x, site)
	if err != nil {
		return err
	}
	err = next(site)
	// After the handler, so that its own values win (a proxied upstream's
	// HSTS, say), and the same on every engine: every adapter writes the
	// response head only once the handler has returned.
	if p != nil && p.HSTS != "" && x.ResponseHeader(hstsHeader) == nil {
		x.SetResponseHeader(hstsHeader, p.HSTS)
	}
	if altSvc != "" && x.ResponseHeader(altSvcHeader) == nil {
		x.SetResponseHeader(altSvcHeader, altSvc)
	}
	return err
}

// admit is the door's part that needs no site: the HTTP version, CONNECT,
// the request's syntax and authority, the client address, the fields no
// client may send and the body limit.
func (d *Door) admit(x exchange.Exchange) error {
	switch x.Proto() {
	case "HTTP/1.1", "HTTP/1.0":
	case "HTTP/2.0", "HTTP/3.0":
		if !exchange.Multiplexed(x) { // "GET / HTTP/2.0" on an HTTP/1 connection
			return ErrVersion
		}
	default:
		return ErrVersion
	}
	if string(x.Method()) == http.MethodConnect && !exchange.Multiplexed(x) {
		// A tunnel through a proxy (RFC 9110, section 9.3.6), which
		// sluice is not; as nginx, refused on HTTP/1.x. (On HTTP/2 and
		// HTTP/3, extended CONNECT carries WebSockets.) Its target would
		// be an authority, or empty, which net/http serves as "/".
		return ErrConnect
	}
	if err := syntax(x); err != nil {
		return err
	}
	if err := authority(x); err != nil {
		return err
	}
	d.client(x)
	for _, name := range d.Strip {
		if x.RequestHeader(name) != nil {
			x.DelRequestHeader(name)
		}
	}
	if max := d.MaxRequestBody; max > 0 {
		switch n := x.ContentLength(); {
		case n > max:
			return exchange.ErrBodyTooLarge
		case n < 0:
			exchange.LimitRequestBody(x, max)
		}
	}
	return nil
}

// acmeChallenge answers an ACME HTTP-01 challenge for a certificate
// being issued, and reports whether it did.
func acmeChallenge(x exchange.Exchange) bool {
	uri := x.RequestURI()
	if !bytes.HasPrefix(uri, challengePrefix) {
		return false
	}
	key, ok := tlsconf.HTTPChallenge(string(x.Host()), string(uri))
	if !ok {
		return false
	}
	x.SetStatus(http.StatusOK)
	x.SetResponseHeader("Content-Type", "text/plain")
	x.SetBody(key)
	return true
}

// tlsPolicy applies site's TLS policy to a request that came over TLS:
// a connection whose handshake was not made for the site is misdirected
// (421), and a client certificate's identity is set in its header. It
// returns the policy (nil when the site has none) for HSTS.
func (d *Door) tlsPolicy(x exchange.Exchange, site *route.Site) (*tlsconf.Policy, error) {
	if d.TLS == nil {
		return nil, nil
	}
	p := d.TLS.Site(site.Name)
	if p == nil {
		return nil, nil
	}
	cs := exchange.TLSState(x)
	if cs == nil {
		if p.ClientAuth != tlsconf.NoClientCert {
			return nil, ErrMisdirected // no handshake state to check: refuse
		}
		return p, nil
	}
	if d.TLS.Misdirected(p, cs.ServerName) {
		return nil, ErrMisdirected
	}
	if p.ClientCertHeader != "" {
		if id := tlsconf.Identity(cs); id != "" {
			x.SetRequestHeader(p.ClientCertHeader, id)
		}
	}
	return p, nil
}

// client decides the client's address: the peer, or, when the peer is a
// trusted proxy, the address its forwarding headers name. X-Real-IP is
// believed from trusted proxies only.
func (d *Door) client(x exchange.Exchange) {
	if len(d.Trusted) > 0 {
		peer := forwarded.Peer(x.RemoteAddr())
		if forwarded.Trusted(peer, d.Trusted) {
			c := forwarded.Client(peer, x.RequestHeader("X-Forwarded-For"), x.RequestHeader("Forwarded"), d.Trusted)
			exchange.SetClient(x, net.TCPAddrFromAddrPort(netip.AddrPortFrom(c, 0)), true)
			return
		}
	}
	if x.RequestHeader(realIPHeader) != nil {
		x.DelRequestHeader(realIPHeader)
	}
}

// authority makes the request's authority the one every later step uses.
// An absolute-form target ("http://a.test/p?q") names it, replacing Host
// (RFC 9112, section 3.2.2), and becomes origin-form ("/p?q"). HTTP/1.1
// requires one (RFC 9112, section 3.2); it must be a valid host[:port],
// and so must a Host header sent beside an absolute-form target.
func authority(x exchange.Exchange) error {
	uri := x.RequestURI()
	if len(uri) > 0 && uri[0] != '/' && !(len(uri) == 1 && uri[0] == '*') {
		host, rest, ok := splitAbsolute(uri)
		if !ok {
			return ErrBadTarget
		}
		if !validHost(host) {
			return ErrBadHost
		}
		// The Host header it replaces still has to be valid, or empty
		// (RFC 9112, section 3.2: a 400 for "a Host header field with an
		// invalid field value"), as net/http and nginx have it.
		if h := x.Host(); len(h) > 0 && !validHost(h) {
			return ErrBadHost
		}
		// Copies: the setters may reuse the buffers uri points into.
		h, r := string(host), string(rest)
		x.SetRequestHeader("Host", h)
		x.SetRequestURI(r)
	}
	host := x.Host()
	if len(host) == 0 {
		if x.Proto() == "HTTP/1.1" {
			return ErrBadHost
		}
		return nil
	}
	if !validHost(host) {
		return ErrBadHost
	}
	return nil
}

// splitAbsolute splits an absolute-form target into its authority and
// its origin-form rest ("/" when the path is empty). Only http and https
// are served; userinfo is refused, and so is a fragment, which no form of
// request-target has (RFC 9112, section 3.2).
func splitAbsolute(uri []byte) (host, rest []byte, ok bool) {
	if bytes.IndexByte(uri, '#') >= 0 {
		return nil, nil, false
	}
	var n int
	switch {
	case len(uri) >= 7 && bytes.EqualFold(uri[:7], []byte("http://")):
		n = 7
	case len(uri) >= 8 && bytes.EqualFold(uri[:8], []byte("https://")):
		n = 8
	default:
		return nil, nil, false
	}
	a := uri[n:]
	end := len(a)
	for i, c := range a {
		if c == '/' || c == '?' {
			end = i
			break
		}
	}
	host, rest = a[:end], a[end:]
	if len(host) == 0 || bytes.IndexByte(host, '@') >= 0 {
		return nil, nil, false
	}
	if len(rest) == 0 || rest[0] == '?' {
		r := make([]byte, 0, len(rest)+1)
		rest = append(append(r, '/'), rest...)
	}
	return host, rest, true
}

// validHost reports whether h is host[:port] as RFC 3986 has it: a
// reg-name or IPv4 address (unreserved and sub-delims; not pct-encoded,
// see hostChar) or a bracketed IP literal, and an optional port of
// digits.
func validHost(h []byte) bool {
	if len(h) > 0 && h[0] == '[' {
		i := bytes.IndexByte(h, ']')
		if i < 0 {
			return false
		}
		if _, err := netip.ParseAddr(string(h[1:i])); err != nil {
			return false
		}
		return validPort(h[i+1:])
	}
	for i, c := range h {
		if c == ':' {
			return validPort(h[i:])
		}
		if !hostChar[c] {
			return false
		}
	}
	return true
}

// validPort accepts "" or ":" followed by at most five digits.
func validPort(p []byte) bool {
	if len(p) == 0 {
		return true
	}
	if p[0] != ':' || len(p) > 6 {
		return false
	}
	for _, c := range p[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// hostChar marks the bytes of a reg-name: unreserved and sub-delims.
// Percent-encoding, which RFC 3986 also allows there, is refused: no
// client needs it (a name outside ASCII travels as its A-label), the
// site table matches names as sent while fasthttp's parser decodes them
// ("a%2etest" would be two names at once), and fasthttp refuses most
// such hosts before the door sees them.
var hostChar = func() (t [256]bool) {
	for _, c := range []byte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=") {
		t[c] = true
	}
	return t
}()
