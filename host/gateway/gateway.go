package gateway

import (
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
)

var (
	errForbidden = &exchange.Error{Status: http.StatusForbidden, Message: "forbidden"}
	errTooMany   = &exchange.Error{Status: http.StatusTooManyRequests, Message: "too many requests"}
	// errNoStore answers a request whose shared rate limit could not be
	// checked, under on_store_error = "deny".
	errNoStore = &exchange.Error{Status: http.StatusServiceUnavailable, Message: "rate limit unavailable"}
)

// Wrap returns a handler that answers 403 to clients a denies, 429 (with
// Retry-After) to requests over l's rate, 503 when l's shared store
// failed and l denies then, and passes the rest to next.
// Either of l and a may be nil.
func Wrap(next exchange.Handler, l *Limiter, a *ACL) exchange.Handler {
	return exchange.HandlerFunc(func(x exchange.Exchange) error {
		if a != nil && !a.Allowed(clientAddr(x, a.TrustedProxies)) {
			return errForbidden
		}
		if l != nil {
			d := l.Check(x)
			l.setHeaders(x, d)
			switch d.Verdict {
			case Over:
				return errTooMany
			case Unavailable:
				return errNoStore
			}
		}
		return next.ServeExchange(x)
	})
}

// retryAfter renders a wait in whole seconds, rounded up, at least 1.
func retryAfter(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	if s < int64(len(smallSeconds)) {
		return smallSeconds[s]
	}
	return strconv.FormatInt(s, 10)
}

var smallSeconds = func() []string {
	s := make([]string, 61)
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return s
}()
