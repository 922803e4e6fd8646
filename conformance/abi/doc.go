// Package abi holds the http_handler ABI conformance suites: the
// http-wasm TCK run through sluice's own host over HTTP/1.1 and HTTP/2, a
// differential test against the reference host (http-wasm-host-go) on the
// guests it ships, and sluice's own tests of the response phase,
// buffering, trailers and pool bounds over loopback.
//
// Everything here is in _test.go files; http-wasm-host-go is a test-only
// dependency and nothing outside tests imports it.
package abi
