// Package ascii holds the byte-level helpers for HTTP field values that
// the engines and the native handlers share: trimming optional whitespace,
// comparing ASCII case-insensitively, finding a token in a comma-separated
// list. They work on []byte without allocating, for the request path.
//
// Where it sits on the request path: under every reader of a header
// (host/exchange's fasthttp adapter, host/proxy and its forwarded package,
// host/static), called per field. It imports only the standard library.
package ascii
