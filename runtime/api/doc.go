// Package api is the one declaration of the contract between the host and
// the filter runtime: HTTP, the request a filter reads and writes and the
// response built for it, the optional interfaces an HTTP may add
// (ReadDeadliner, BodyBufferer), and Services, what the host offers
// filters beyond the request, whatever their ABI.
//
// Where it sits on the request path: nowhere by itself. The host's
// exchange.Exchange embeds HTTP, so every engine's exchange is one; the
// runtime (runtime.HTTP) and its ABI (runtime/internal/httpwasm) name it by
// alias and call its methods while a guest call runs.
//
// It imports only the standard library, so that the host's engine layer
// can embed it without pulling in the Wasm runtime.
package api
