// Package telemetry checks sluice's telemetry against the real peers it
// is meant for: a Prometheus server scraping the admin /metrics, and a
// Jaeger all-in-one receiving OTLP traces (over HTTP and gRPC) and
// answering queries for them.
//
// The tests carry the build tag "conformance" (make conformance). They
// need /usr/bin/prometheus (Debian package "prometheus") and a Jaeger
// v1.76.0 binary, built once from the Go module proxy into
// $(go env GOCACHE)/../sluice-conformance and reused. A missing peer
// skips its test with the reason, or fails it when
// SLUICE_CONFORMANCE_STRICT=1 (CI).
//
// Environment: SLUICE_PROMETHEUS and SLUICE_JAEGER name the binaries
// instead; SLUICE_JAEGER_BUILD_TIMEOUT bounds the one-time build
// (default 15m).
package telemetry
