package observe

import (
	"errors"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
)

// Early answers: the errors a listener's request path returns before a
// route's Wrap saw the request (the front door's 400, 421, 413 and 505,
// the router's 404 and bad paths, 503 before the first config) are
// logged and counted like other requests, with empty site and route.

// observed marks an error that a route's Wrap has logged and counted,
// so that WrapEarly does not count it again. It allocates on the error
// path only.
type observed struct{ err error }

func (o observed) Error() string { return o.err.Error() }
func (o observed) Unwrap() error { return o.err }

// WrapEarly returns next, a listener's whole request path, logging and
// counting the errors it returns that no route's Wrap saw. Requests that
// reach a route cost it one time.Now and an error check.
func (o *Observer) WrapEarly(next exchange.Handler) exchange.Handler {
	if o == nil || (o.Metrics == nil && o.AccessLog == nil) {
		return next
	}
	w := &wrapped{next: next, m: o.Metrics, log: o.AccessLog}
	if o.AccessLog != nil {
		w.needs = o.AccessLog.needs &^ needUpstream // no route: no upstream
	}
	return early{w}
}

type early struct{ w *wrapped }

func (e early) ServeExchange(x exchange.Exchange) error {
	start := time.Now()
	err := e.w.next.ServeExchange(x)
	if err == nil {
		return err
	}
	var seen observed
	if errors.As(err, &seen) {
		return err
	}
	w := e.w
	mi := methodIndex(x.Method())
	status := exchange.StatusOf(err)
	d := time.Since(start)
	size := bodySize(x, mi, status, err)
	if w.m != nil {
		ms := w.methodSeries(mi)
		ms.active.Inc() // record ends the count
		w.record(x, mi, ms, status, d, size, noSpan)
	}
	if w.log != nil {
		if w.needs&needRequestID != 0 {
			ensureRequestID(x)
		}
		w.logLine(x, start, d, status, size, noSpan, nil)
	}
	return err
}
