// Package store runs several sluice processes against one real
// redis-server (Debian's, started by the test on a free loopback port,
// without persistence) and checks that what they share holds: a rate
// limit counts across all of them, a store outage follows on_store_error,
// and one ACME order serves every instance (with Pebble as the CA).
// Build tag `conformance`; skipped when redis-server is not installed.
package store
