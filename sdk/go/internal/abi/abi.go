// Package abi is the seam between the sluice SDK and what runs it: the
// http_handler host functions when compiled to wasip1, or the fake host of
// package sluicetest when testing on the build machine.
//
// Host has one method per host function, already decoded (strings rather
// than pointers and lengths), so the fake needs no linear memory.
package abi

// Header kinds, body kinds and feature bits, as numbered by the ABI.
const (
	HeaderRequest  = 0
	HeaderResponse = 1
	BodyRequest    = 0
	BodyResponse   = 1

	FeatureBufferRequest  = 1
	FeatureBufferResponse = 2
	FeatureTrailers       = 4
)

// Host is the http_handler import module, decoded.
type Host interface {
	EnableFeatures(features uint32) uint32
	GetConfig() []byte
	LogEnabled(level int32) bool
	Log(level int32, msg string)
	GetMethod() string
	SetMethod(method string)
	GetURI() string
	SetURI(uri string)
	GetProtocolVersion() string
	GetSourceAddr() string
	GetHeaderNames(kind uint32) []string
	GetHeaderValues(kind uint32, name string) []string
	SetHeaderValue(kind uint32, name, value string)
	AddHeaderValue(kind uint32, name, value string)
	RemoveHeader(kind uint32, name string)
	// ReadBody fills p from the body and says whether the body ended.
	ReadBody(kind uint32, p []byte) (n int, eof bool)
	WriteBody(kind uint32, p []byte)
	GetStatusCode() uint32
	SetStatusCode(code uint32)
}

// Current is the host the SDK calls. The wasip1 build sets it at start;
// sluicetest sets it for each request it runs.
var Current Host

// Guest is what the SDK registers for the host to call: the bodies of the
// handle_request and handle_response exports, and the setup functions
// registered with sluice.Setup.
var Guest struct {
	HandleRequest  func() uint64
	HandleResponse func(reqCtx, isError uint32)
	// Setup runs every function given to sluice.Setup, in order.
	Setup func() error
	// Reset forgets per-instance state (features, request state), so a
	// test starts like a fresh instance.
	Reset func()
}
