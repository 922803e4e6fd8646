// Package chain runs a route's Wasm filters around its native handler:
// request phases in declared order, then the handler, then response
// phases in reverse order. A filter that answers stops the chain; the
// filters before it still see their response phase.
//
// Where it sits on the request path: after site and route matching and
// the gateway checks, around the native handler (static or proxy).
//
// What it imports of host is drawn in host/README.md; outside host,
// runtime, which never imports it.
package chain
