// Package loopcheck makes the loop checks of wazero's compiled code cheap:
// most of them return at once, one in Every leaves the guest for Go.
//
// With RuntimeConfig.WithCloseOnContextDone(true), which sluice needs
// (see package interrupt), wazero's optimizing compiler puts a call at
// the head of every loop of the guest, to a trampoline that exits to Go,
// checks whether the module was closed, and re-enters the guest: tens of
// nanoseconds per loop iteration. A guest whose work is loops (a WAF
// matching rules) spent about a third of its time there.
//
// Thin points the engine's check at a stub of its own instead: it counts
// down a counter and returns, and only when the counter runs out resets
// it and jumps to wazero's trampoline, which does the check as before.
// The guest still leaves for Go within Every loop iterations, so a call
// past its deadline still stops, and the Go runtime can still stop the
// world for a GC while a guest loops (it preempts the goroutine on its
// way through that exit); it only takes up to Every iterations longer.
// The counter is one per call engine (wazero's execution context of one
// exported function of one instance, which runs one call at a time), so
// threads running guests share no cache line: it lives in the context's
// slot for the memory.atomic.wait32 trampoline, which no code can call in
// a runtime without the threads feature (sluice's), and Thin refuses a
// runtime with it.
//
// Neither the compiled code nor the compilation cache changes: the
// engine's call engines read the trampoline's address from its shared
// functions when they are made, and Thin replaces that address before
// any is made. This reads and writes fields wazero does not export,
// written against wazero v1.12.0's optimizing compiler on amd64; Thin
// reports false and changes nothing elsewhere or when the fields are not
// there. This package imports nothing of sluice.
package loopcheck

// Every is how many loop iterations (counted over all the engine's
// guests) at most pass between two exits to Go.
const Every = 1024
