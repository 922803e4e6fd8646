package proxy

import "go.opentelemetry.io/otel/trace"

// Traceparent is appendTraceparent, for tests.
func Traceparent(sc trace.SpanContext) string { return string(appendTraceparent(nil, sc)) }
