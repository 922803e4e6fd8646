package proxy

import (
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Traceparent is appendTraceparent, for tests.
func Traceparent(sc trace.SpanContext) string { return string(appendTraceparent(nil, sc)) }

// SetClientCheck sets how often a waiting request looks at its client,
// until the test ends.
func SetClientCheck(t interface{ Cleanup(func()) }, d time.Duration) {
	old := clientCheckEvery.Swap(int64(d))
	t.Cleanup(func() { clientCheckEvery.Store(old) })
}

// Counters sums over h's HTTP/1.1 upstreams the requests in flight, the
// connections checked out (busy) and open, and the pool's count of
// connections (in use and idle) and of idle ones.
func Counters(h *Handler) (inFlight, busy, open, conns, idle int64) {
	for _, u := range h.ups {
		inFlight += u.node.InFlight.Load()
		busy += u.busy.Load()
		open += u.open.Load()
		if u.hc != nil {
			conns += int64(u.hc.ConnsCount())
			idle += int64(u.hc.IdleConnsCount())
		}
	}
	return
}
