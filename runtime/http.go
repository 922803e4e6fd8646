package runtime

import (
	"github.com/sluicehq/sluice/runtime/api"
	"github.com/sluicehq/sluice/runtime/internal/httpwasm"
)

// HTTP is the request a filter reads and writes, and the response being
// built for it. It is declared once, in runtime/api; the host's
// exchange.Exchange embeds it, so the host passes its exchange in as is,
// and runtime/filtertest has an in-memory one for tests.
//
// The runtime calls these methods only while a guest call is running, from
// the goroutine that called HandleRequest or HandleResponse, and never
// keeps a slice it got from them past that call.
type HTTP = api.HTTP

// Features is the set of host features a guest enabled with
// enable_features. The host reads it to decide what to buffer. Its bits
// are the http-wasm ABI's; the runtime's binding (internal) converts.
type Features uint32

const (
	// FeatureBufferRequest: the guest may read the request body and the
	// next handler still sees all of it. The runtime does the buffering.
	FeatureBufferRequest Features = 1 << iota
	// FeatureBufferResponse: the guest reads and rewrites the response
	// of the next handler in handle_response. The host must not send
	// anything before HandleResponse returns, and must make the body
	// readable through HTTP.ResponseBody; a host whose body may be a file
	// or a stream implements BodyBufferer, and the runtime buffers it
	// only if the guest reads it.
	FeatureBufferResponse
	// FeatureTrailers is never granted: this host has no trailers.
	FeatureTrailers
)

// String lists the enabled features by name, separated by '|'.
func (f Features) String() string { return httpwasm.Features(f).String() }

// The runtime's Features are the ABI's bit for bit.
var _ = [1]struct{}{}[FeatureBufferRequest^Features(httpwasm.FeatureBufferRequest)|FeatureBufferResponse^Features(httpwasm.FeatureBufferResponse)|FeatureTrailers^Features(httpwasm.FeatureTrailers)]

// Services are the host services filters may use beyond their request,
// whatever their ABI; EngineOptions.Services hands them in. Declared once,
// in runtime/api.
type Services = api.Services

// ReadDeadliner is implemented by an HTTP whose request body reads can be
// given a deadline (see runtime/api).
type ReadDeadliner = api.ReadDeadliner

// BodyBufferer is implemented by an HTTP whose response body may be a
// file or a stream (see runtime/api). The runtime calls it when a guest
// first reads the response body, with the filter's MaxBuffer.
type BodyBufferer = api.BodyBufferer
