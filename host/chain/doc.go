// Package chain runs a route's Wasm filters around its native handler:
// request phases in declared order, then the handler, then response
// phases in reverse order. A filter that answers stops the chain; the
// filters before it still see their response phase.
//
// Where it sits on the request path: after site and route matching and
// the gateway checks, around the native handler (static or proxy).
//
// It imports host/exchange and runtime; runtime never imports it.
package chain
