// Package filters holds sluice's first-party filters, one folder each:
// the guest source (Go, C, …) built against sdk/, the committed .wasm
// beside it, its build.sh and a README. This package itself only has the
// tests that run every filter through the real runtime and check that each
// committed .wasm is what its build.sh makes.
//
// The guests import nothing of the host; this package's tests import
// runtime (through runtime/filtertest) and nothing of host.
package filters
