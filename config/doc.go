// Package config turns a sluice HCL config file into an immutable, fully
// checked Go value.
//
// Load (or Parse) reads the file, decodes every block against its schema,
// fills in defaults, resolves relative paths against the file's directory
// and runs the checks that span blocks (site names per listener, default
// sites, TLS and plain sites sharing an address, unknown filters, ...). All
// problems are returned at once as hcl.Diagnostics with source ranges;
// FormatDiagnostics renders them as FILE:LINE:COL, the source line and a
// caret under the offending token. The result is a *Config that nothing
// modifies afterwards; Redacted and JSON give the effective config for the
// admin endpoint.
//
// config decodes the frame of a config (server, listeners, sites,
// routes, filters, tls, telemetry, store) itself. The blocks of a route,
// its handler (`static {}`, `proxy {}`, `respond {}`) and the blocks
// beside it (`rate_limit {}`), belong to the packages that implement
// them: each registers its kind with RegisterHandler or
// RegisterRouteBlock, and its value (a Block) carries the schema in hcl
// tags, the defaults, the checks with ranges (DecodeHCL) and the
// reference rows (doc tags). Route.Blocks holds what they decoded to.
//
// Expressions may call env("NAME"), env("NAME", "default") and
// file("path"); there are no variables. Durations are strings with units
// ("5s"), sizes are strings with units ("16MiB"): a bare number is an error.
// CONFIG.md is the reference for every block and attribute.
//
// Where it sits: config runs when the server starts, on SIGHUP and on
// `sluice validate`, before a generation is built, never on the request
// path. A request never parses HCL or reads a config file.
//
// What it must not import: anything of sluice (host, runtime, filters).
// It imports only the standard library, hcl/v2 and go-cty. It knows nothing
// of the server that consumes it; host decides what the values mean, and
// the host's handler packages, importing config, register their blocks
// (host/handlers links them all in).
package config
