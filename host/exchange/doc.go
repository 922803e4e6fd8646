// Package exchange is the one interface between the HTTP engines and
// everything that handles a request: the native handlers (static files,
// reverse proxy), the filter host and the error renderer.
//
// Where it sits on the request path: an engine (fasthttp for HTTP/1.1,
// sluice's own, host/h2, or net/http for HTTP/2, quic-go's http3.Server,
// a net/http handler too, for HTTP/3) accepts a request, wraps it in an
// Exchange through its adapter (Fast, Std, or host/h2's stream, which
// embeds Hooks: engine.go), and hands it to a Handler. Everything after
// that point is written once against Exchange and runs unchanged on every
// engine.
//
// Contract shared by the three adapters (Fast, Std and host/h2's stream):
//
//   - A response is described, then committed: status, headers and body
//     (SetBody, Write, SendFile or Stream) are recorded while the handler
//     runs and written after it returns. Response filters can therefore read
//     and replace what a native handler produced.
//   - Byte slices returned by request accessors are valid only until the
//     handler returns, and must not be modified.
//   - A slice given to SetBody is not copied: it may come from a cache and
//     must not be modified afterwards by anyone.
//   - For HEAD requests the adapters send the headers (Content-Length
//     included) and no body.
//
// What it imports of host is drawn in host/README.md (internal helpers
// only); outside host, runtime/api alone (the HTTP interface it embeds,
// declared there once so that the filter runtime takes an Exchange as
// is; a leaf package of the standard library only). It must not import a
// handler, config or the Wasm runtime.
package exchange
