//go:build race

package host

// raceEnabled: the race detector makes sync.Pool drop items, so
// allocation totals mean nothing under it.
const raceEnabled = true
