package api

import (
	"context"
	"io"
	"net"
	"time"
)

// HTTP is the request a filter reads and writes, and the response being
// built for it. The host's exchange.Exchange embeds it; filter tests use
// the in-memory one of package runtime/filtertest.
//
// The runtime calls these methods only while a guest call is running, from
// the goroutine that called HandleRequest or HandleResponse, and never
// keeps a slice it got from them past that call. Byte slices returned by
// the accessors are valid until the handler returns and must not be
// modified.
type HTTP interface {
	// Context is cancelled when the client goes away or the server shuts
	// down; it carries the request's trace context (a filter span is a
	// child of the span in it).
	Context() context.Context

	// Method is the request method, upper case as sent ("GET").
	Method() []byte
	SetMethod(method string)
	// RequestURI is the path, plus '?' and the query when there is one.
	RequestURI() []byte
	// SetRequestURI replaces path and query ("/a/b?x=1").
	SetRequestURI(uri string)
	// Proto is "HTTP/1.0", "HTTP/1.1", "HTTP/2.0" or "HTTP/3.0".
	Proto() string
	// IsTLS reports whether the request came over TLS.
	IsTLS() bool
	// RemoteAddr is the peer's address.
	RemoteAddr() net.Addr

	// RequestHeader returns the first value of a request header, or nil
	// when there is none; a field sent empty gives an empty, non-nil
	// value. Names are case-insensitive. Values are as the client sent
	// them (a Cookie is never parsed), trimmed of surrounding spaces.
	RequestHeader(name string) []byte
	// VisitRequestHeaders calls fn for each request header field, once
	// per value, empty ones included, as the client sent them and as
	// edited since, in the order sent. Host is included.
	VisitRequestHeaders(fn func(name, value []byte))
	// SetRequestHeader replaces every field named name with one.
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
	// ResponseBody returns the buffered body (SetBody or Write), or nil
	// when the body is a file or a stream.
	ResponseBody() []byte
	// SetBody sets the whole response body without copying it: the slice
	// may come from a cache and must not be modified afterwards.
	SetBody(b []byte)
	// ResetBody drops any body set so far (closing a pending file).
	ResetBody()
	// Write appends to a buffered response body.
	Write(p []byte) (int, error)
}

// ReadDeadliner is implemented by an HTTP whose request body reads can be
// given a deadline (a zero time removes it): a guest's reads of the
// request body then stop at the filter's deadline even when the client
// sends nothing. Without it (or when it fails) the runtime checks the
// deadline between reads, which stops a client that trickles but not one
// that stalls.
type ReadDeadliner interface {
	SetReadDeadline(t time.Time) error
}

// BodyBufferer is implemented by an HTTP whose response body may be a
// file or a stream: BufferBodyLimit reads it into memory, at most
// limit+1 bytes of it (no limit when negative), so that ResponseBody
// returns it, and reports false, dropping the body, when it is larger.
// A non-zero deadline stops reading once passed. The runtime calls it
// when a guest first reads the response body, with the filter's
// MaxBuffer; without it ResponseBody is all a guest can read.
type BodyBufferer interface {
	BufferBodyLimit(limit int64, deadline time.Time) (fits bool, err error)
}
