// Package handlers registers every native block of a route with config:
// importing it makes config decode `static {}`, `proxy {}`, `respond {}`
// and `rate_limit {}`. Each block's schema, defaults, decoding and
// reference live in its handler's package (host/static, host/proxy,
// host/respond, host/gateway), which registers it in an init function;
// this package is the one list of them, for the host and for tests that
// load whole configs (config's own, in package config_test).
//
// It is not on the request path: it only links the handler packages in.
package handlers

import (
	_ "github.com/sluicehq/sluice/host/gateway" // rate_limit
	_ "github.com/sluicehq/sluice/host/proxy"   // proxy
	_ "github.com/sluicehq/sluice/host/respond" // respond
	_ "github.com/sluicehq/sluice/host/static"  // static
)
