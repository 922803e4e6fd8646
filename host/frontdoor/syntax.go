package frontdoor

import (
	"net/http"
	"sync"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/internal/ascii"
)

// Errors of the request's syntax, the same on every engine. Messages are
// safe for clients.
var (
	ErrBadMethod = exchange.Errorf(http.StatusBadRequest, "bad request: malformed method")
	ErrBadField  = exchange.Errorf(http.StatusBadRequest, "bad request: malformed header field")
	ErrConnField = exchange.Errorf(http.StatusBadRequest, "bad request: connection-specific header field")
)

// syntax checks what every engine's parser should have refused, whatever
// it did: the HTTP/2 and HTTP/3 engines carry a pseudo-header's value as
// it came, and the proxy writes the method, the target and the fields
// into an HTTP/1.1 head, where a CR, LF or SP would start a request of
// the client's making (request smuggling). As net/http has it:
//
//   - the method is a token (RFC 9110, section 9.1);
//   - the target has no control byte, SP or DEL, path and query alike
//     (RFC 9112, section 3.2; the path's own rules are route.Canonical's,
//     later); it is empty only for CONNECT;
//   - field names are tokens (RFC 9110, section 5.1); that they are in
//     lower case on HTTP/2 and HTTP/3 (RFC 9113, section 8.2; RFC 9114,
//     section 4.2) is the engines' to check (host/h2, x/net/http2 and
//     quic-go do), since every adapter presents names canonicalized
//     ("Content-Type"), as net/http does;
//   - field values are field-content: no control byte but HTAB, no DEL
//     (RFC 9110, section 5.5), so no CR, LF or NUL;
//   - on HTTP/2 and HTTP/3, no connection-specific field (Connection,
//     Keep-Alive, Proxy-Connection, Transfer-Encoding, Upgrade; TE but
//     "trailers"): RFC 9113, section 8.2.2, makes such a request
//     malformed.
//
// On HTTP/1.x it also applies the client's Connection options (see
// connectionOptions). It allocates nothing on a well-formed request.
func syntax(x exchange.Exchange) error {
	if !ascii.Token(x.Method()) {
		return ErrBadMethod
	}
	uri := x.RequestURI()
	if !validTarget(uri) || len(uri) == 0 && string(x.Method()) != http.MethodConnect {
		return ErrBadTarget
	}
	c := checkers.Get().(*checker)
	c.mux = exchange.Multiplexed(x)
	x.VisitRequestHeaders(c.visit)
	err, options := c.err, c.options
	c.err, c.options = nil, false
	checkers.Put(c)
	if err == nil && options {
		connectionOptions(x)
	}
	return err
}

// checker is one request's field check, pooled with its visit func
// bound once, so that the check allocates nothing.
type checker struct {
	mux     bool // HTTP/2 or HTTP/3
	options bool // a Connection field names another field
	err     error
	visit   func(name, value []byte)
}

var checkers = sync.Pool{New: func() any {
	c := new(checker)
	c.visit = c.field
	return c
}}

func (c *checker) field(name, value []byte) {
	if c.err != nil {
		return
	}
	if !ascii.Token(name) || !validValue(value) {
		c.err = ErrBadField
		return
	}
	if c.mux {
		if connectionSpecific(name, value) {
			c.err = ErrConnField
		}
		return
	}
	if len(name) == 10 && ascii.EqualFold(name, "connection") && namesFields(value) {
		c.options = true
	}
}

// validTarget reports whether a request target has no control byte, SP
// or DEL.
func validTarget(t []byte) bool {
	for _, c := range t {
		if c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// validValue reports whether a field value is field-content: no control
// byte but HTAB, no DEL. obs-text (0x80 and above) is allowed, as
// net/http has it.
func validValue(v []byte) bool {
	for _, c := range v {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// connectionSpecific reports a field HTTP/2 and HTTP/3 have no place
// for (RFC 9113, section 8.2.2; RFC 9114, section 4.2). An extended
// CONNECT (RFC 8441) names its protocol in :protocol, never in Upgrade.
func connectionSpecific(name, value []byte) bool {
	switch len(name) {
	case 2:
		return ascii.EqualFold(name, "te") && !ascii.EqualFold(ascii.TrimOWS(value), "trailers")
	case 7:
		return ascii.EqualFold(name, "upgrade")
	case 10:
		return ascii.EqualFold(name, "connection") || ascii.EqualFold(name, "keep-alive")
	case 16:
		return ascii.EqualFold(name, "proxy-connection")
	case 17:
		return ascii.EqualFold(name, "transfer-encoding")
	}
	return false
}

// namesFields reports whether a Connection value lists a token other
// than the ones kept (see kept).
func namesFields(v []byte) bool {
	found := false
	eachToken(v, func(tok []byte) bool {
		found = !kept(tok)
		return !found
	})
	return found
}

// eachToken calls fn with each non-empty item of a comma-separated list
// until fn returns false.
func eachToken(v []byte, fn func(tok []byte) bool) {
	for len(v) > 0 {
		i := 0
		for i < len(v) && v[i] != ',' {
			i++
		}
		tok := ascii.TrimOWS(v[:i])
		if i < len(v) {
			i++
		}
		v = v[i:]
		if len(tok) > 0 && !fn(tok) {
			return
		}
	}
}

// kept reports the Connection tokens the door leaves to later steps:
// the connection's own options (close, keep-alive), the fields the
// proxy handles itself as hop-by-hop (Upgrade, TE, Trailer, ...), and
// the ones that frame or route the request, which no client may take
// away from this server.
func kept(tok []byte) bool {
	for _, k := range [...]string{"close", "keep-alive", "upgrade", "te", "trailer", "connection",
		"host", "content-length", "transfer-encoding", "http2-settings", "proxy-connection"} {
		if len(tok) == len(k) && ascii.EqualFold(tok, k) {
			return true
		}
	}
	return false
}

// connectionOptions applies the client's Connection options (RFC 9110,
// section 7.6.1) to what the client sent, and only to that: the fields
// it names are removed here, before the door, a filter or the proxy
// adds any field of its own, and Connection keeps only the tokens later
// steps need (kept). A client's "Connection: X-Forwarded-For" thus drops
// its own X-Forwarded-For, never the one sluice writes, nor an identity
// header the door sets. The rare path: it allocates.
func connectionOptions(x exchange.Exchange) {
	var conns [][]byte
	x.VisitRequestHeaders(func(name, value []byte) {
		if len(name) == 10 && ascii.EqualFold(name, "connection") {
			conns = append(conns, append([]byte(nil), value...))
		}
	})
	var keep []byte
	var drop []string
	for _, v := range conns {
		eachToken(v, func(tok []byte) bool {
			if kept(tok) {
				if len(keep) > 0 {
					keep = append(keep, ", "...)
				}
				keep = append(keep, tok...)
			} else {
				drop = append(drop, string(tok))
			}
			return true
		})
	}
	for _, name := range drop {
		x.DelRequestHeader(name)
	}
	if len(keep) == 0 {
		x.DelRequestHeader("Connection")
		return
	}
	x.SetRequestHeader("Connection", string(keep))
}
