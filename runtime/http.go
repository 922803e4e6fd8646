package runtime

import (
	"context"
	"io"
	"net"

	"github.com/sluicehq/sluice/runtime/internal/abi"
)

// HTTP is the request a filter reads and writes, and the response being
// built for it. Its methods are a subset of the host's exchange.Exchange,
// with identical signatures, so the host passes its exchange in as is.
//
// The runtime calls these methods only while a guest call is running, from
// the goroutine that called HandleRequest or HandleResponse, and never
// keeps a slice it got from them past that call.
type HTTP interface {
	// Context carries the request's trace context; a filter span is a
	// child of the span in it.
	Context() context.Context

	// Method is the request method, upper case as sent ("GET").
	Method() []byte
	SetMethod(method string)
	// RequestURI is the path, plus '?' and the query when there is one.
	RequestURI() []byte
	// SetRequestURI replaces path and query ("/a/b?x=1").
	SetRequestURI(uri string)
	// Proto is "HTTP/1.0", "HTTP/1.1" or "HTTP/2.0".
	Proto() string
	// IsTLS reports whether the request came over TLS.
	IsTLS() bool
	// RemoteAddr is the peer's address.
	RemoteAddr() net.Addr

	// RequestHeader returns the first value of a request header, or nil.
	RequestHeader(name string) []byte
	// VisitRequestHeaders calls fn for each request header field, in
	// order, once per value. Host is included.
	VisitRequestHeaders(fn func(name, value []byte))
	SetRequestHeader(name, value string)
	AddRequestHeader(name, value string)
	DelRequestHeader(name string)
	// RequestBody reads the request body.
	RequestBody() io.Reader
	// SetRequestBody replaces the request body seen by later handlers.
	SetRequestBody(b []byte)

	// Status is the response status; 200 until set.
	Status() int
	SetStatus(code int)
	// ResponseHeader returns the first value of a response header, or nil.
	ResponseHeader(name string) []byte
	// VisitResponseHeaders calls fn for each response header field, once
	// per value.
	VisitResponseHeaders(fn func(name, value []byte))
	SetResponseHeader(name, value string)
	AddResponseHeader(name, value string)
	DelResponseHeader(name string)
	// ResponseBody returns the buffered body, or nil when the body is a
	// file or a stream.
	ResponseBody() []byte
	// SetBody sets the whole response body without copying it.
	SetBody(b []byte)
	// ResetBody drops any body set so far.
	ResetBody()
	// Write appends to a buffered response body.
	Write(p []byte) (int, error)
}

// Features is the set of host features a guest enabled with
// enable_features. The host reads it to decide what to buffer.
type Features = abi.Features

const (
	// FeatureBufferRequest: the guest may read the request body and the
	// next handler still sees all of it. The runtime does the buffering.
	FeatureBufferRequest = abi.FeatureBufferRequest
	// FeatureBufferResponse: the guest reads and rewrites the response
	// of the next handler in handle_response. The host must not send
	// anything before HandleResponse returns, and must make the body
	// readable through HTTP.ResponseBody; a host whose body may be a file
	// or a stream implements BodyBufferer, and the runtime buffers it
	// only if the guest reads it.
	FeatureBufferResponse = abi.FeatureBufferResponse
	// FeatureTrailers is never granted: this host has no trailers.
	FeatureTrailers = abi.FeatureTrailers
)

// ReadDeadliner is implemented by an HTTP whose request body reads can be
// given a deadline (a zero time removes it): a guest's reads of the
// request body then stop at the filter's deadline even when the client
// sends nothing. Without it the runtime checks the deadline between
// reads, which stops a client that trickles but not one that stalls.
type ReadDeadliner = abi.ReadDeadliner

// BodyBufferer is implemented by an HTTP whose response body may be a
// file or a stream: BufferBodyLimit reads it into memory, at most
// limit+1 bytes of it (no limit when negative), so that ResponseBody
// returns it, and reports false, dropping the body, when it is larger.
// A non-zero deadline stops reading once passed. The runtime calls it
// when a guest first reads the response body, with the filter's
// MaxBuffer.
type BodyBufferer = abi.BodyBufferer

// Compile-time check that the ABI sees the same request.
var _ abi.HTTP = HTTP(nil)
