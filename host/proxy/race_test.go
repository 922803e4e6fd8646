//go:build race

package proxy_test

// raceEnabled: the race detector makes sync.Pool drop items, so
// allocation counts mean nothing under it.
const raceEnabled = true
