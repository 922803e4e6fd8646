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
