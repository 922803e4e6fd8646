// Package route picks the site and the route for a request: the site by
// Host (exact names, aliases, "*.suffix" wildcards, then the listener's
// default; port and letter case ignored), the route by the longest path
// prefix.
//
// Where it sits on the request path: right after the engine hands over an
// exchange, before the route's request filters. A Table is built once per
// config generation and never changes; Match allocates nothing for a clean
// path.
//
// It imports only host/exchange.
package route
