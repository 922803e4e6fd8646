package generation

import (
	"bytes"
	"net/http"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/route"
)

var errBadRequest = exchange.Errorf(http.StatusBadRequest, "bad request")

// canonicalPath computes the request's canonical path once
// (route.Canonical), so that routing, allow/deny, rate limits, filters,
// static files and the proxy all see the same one: when the path as sent
// is not already that path (escaped), the request URI is rewritten to
// it, the query kept. The path as sent is kept for the proxy where it
// cannot leave the route chosen (route.Site.Forwardable); "%2F" inside a
// segment then reaches the upstream as sent. A path Canonical refuses is
// answered with 400. The query is appended as sent: the front door has
// refused a target with a control byte, SP or DEL before (its syntax
// check), so it cannot carry a line of its own.
func canonicalPath(x exchange.Exchange, site *route.Site) ([]byte, error) {
	raw := x.Path()
	if len(raw) == 0 {
		raw = []byte{'/'}
	}
	canon, err := route.Canonical(raw)
	if err != nil {
		return nil, errBadRequest
	}
	if len(canon) == len(raw) && &canon[0] == &raw[0] { // already canonical: the fast path
		return canon, nil
	}
	esc := route.AppendEscaped(make([]byte, 0, len(canon)+8), canon)
	if bytes.Equal(esc, raw) { // only escapes that had to stay
		return canon, nil
	}
	var sent []byte
	if site.Forwardable(raw, canon) {
		sent = append([]byte(nil), raw...) // raw is about to be overwritten
	}
	q := x.Query()
	uri := make([]byte, 0, len(esc)+1+len(q))
	uri = append(uri, esc...)
	if len(q) > 0 {
		uri = append(append(uri, '?'), q...)
	}
	x.SetRequestURI(string(uri))
	if sent != nil {
		exchange.SetRawPath(x, sent, esc)
	}
	return canon, nil
}
