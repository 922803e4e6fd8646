// Package core is the ABI-neutral core of the filter runtime: an
// Instance (one wazero module instance with its memory cap, snapshot
// state and per-instance context) and the deadline of its calls (one
// timer per instance, the interrupt that stops a guest at its deadline,
// the resume that puts it back), and the Pool of one module's instances
// (idle ones, references, replacements); Binding is what an ABI adds. It
// knows nothing of request phases or of any ABI's exports: a binding
// (runtime/internal/httpwasm) checks and defines, package runtime drives
// the calls.
//
// It imports wazero and the runtime's other internal packages
// (interrupt, memlimit, snapshot), nothing of sluice above them.
package core
