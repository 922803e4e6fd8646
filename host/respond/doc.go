// Package respond is the `respond {}` handler: a route that answers every
// request with a fixed status, body and headers, without touching the
// disk or an upstream.
//
// Where it sits on the request path: it is a native handler, the last step
// of a route, after the request filters and the gateway and before the
// response filters. It owns its block: Options is the schema (hcl tags),
// Defaults the defaults, and the doc tags the reference rows of
// config/CONFIG.md.
package respond
