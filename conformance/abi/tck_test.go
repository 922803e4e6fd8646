package abi_test

import (
	"testing"

	"github.com/http-wasm/http-wasm-host-go/tck"

	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/runtime"
)

// TestTCK runs the http-wasm TCK (35 cases) through sluice's host, with
// the TCK backend as the next handler, behind each engine: fasthttp
// (HTTP/1.1), net/http (HTTP/1.1) and net/http h2c (HTTP/2).
func TestTCK(t *testing.T) {
	e := newEngine(t)
	f := newFilter(t, e, "tck", tck.GuestWASM, runtime.FilterOptions{PoolSize: 2})
	h := filterHandler(f, tck.BackendHandler())
	for _, eng := range exchangetest.Engines(t, h) {
		t.Run(eng.Name, func(t *testing.T) {
			tck.Run(t, eng.Client, eng.URL)
		})
	}
}
