//go:build !wasip1

package sluice

// wasm is false off WebAssembly: Setup functions wait for sluicetest.
const wasm = false
