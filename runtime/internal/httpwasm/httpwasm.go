// Package httpwasm is the runtime's binding of the http-wasm
// "http_handler" ABI: the host functions a guest links against (wazero
// host functions), the check of a module's imports and exports, and the
// rules that decide which call is legal in which phase. A second ABI gets
// a package of its own beside it.
//
// It knows nothing of pools, module pools or tracing; package runtime puts
// an *Invocation in the context of each guest call and this package reads
// and writes the request through it. Every misuse by a guest (a pointer
// outside memory, an unknown enum value, a write after the response was
// committed, an oversized header) panics with an error wrapping ErrABI,
// which wazero turns into a trap of that guest call alone.
package httpwasm

import (
	"errors"
	"strings"

	"github.com/tetratelabs/wazero/api"

	httpapi "github.com/sluicehq/sluice/runtime/api"
)

// ModuleName is the import module of the ABI.
const ModuleName = "http_handler"

// Guest exports.
const (
	FuncHandleRequest  = "handle_request"  // () -> i64 ctx_next
	FuncHandleResponse = "handle_response" // (req_ctx i32, is_error i32) -> ()
	Memory             = "memory"
)

// Host functions, by their import names.
const (
	FuncEnableFeatures     = "enable_features"
	FuncGetConfig          = "get_config"
	FuncLogEnabled         = "log_enabled"
	FuncLog                = "log"
	FuncGetMethod          = "get_method"
	FuncSetMethod          = "set_method"
	FuncGetURI             = "get_uri"
	FuncSetURI             = "set_uri"
	FuncGetProtocolVersion = "get_protocol_version"
	FuncGetHeaderNames     = "get_header_names"
	FuncGetHeaderValues    = "get_header_values"
	FuncSetHeaderValue     = "set_header_value"
	FuncAddHeaderValue     = "add_header_value"
	FuncRemoveHeader       = "remove_header"
	FuncReadBody           = "read_body"
	FuncWriteBody          = "write_body"
	FuncGetStatusCode      = "get_status_code"
	FuncSetStatusCode      = "set_status_code"
	FuncGetSourceAddr      = "get_source_addr"
)

// Features is the bit set a guest asks for with enable_features.
type Features uint32

const (
	// FeatureBufferRequest keeps the request body readable by the next
	// handler after the guest read it.
	FeatureBufferRequest Features = 1 << iota
	// FeatureBufferResponse makes the response of the next handler
	// readable and writable in handle_response.
	FeatureBufferResponse
	// FeatureTrailers asks for trailers; this host does not grant it.
	FeatureTrailers
)

// Supported is what enable_features can grant on this host.
const Supported = FeatureBufferRequest | FeatureBufferResponse

// String lists the enabled features by name, separated by '|'.
func (f Features) String() string {
	var names []string
	if f&FeatureBufferRequest != 0 {
		names = append(names, "buffer_request")
	}
	if f&FeatureBufferResponse != 0 {
		names = append(names, "buffer_response")
	}
	if f&FeatureTrailers != 0 {
		names = append(names, "trailers")
	}
	return strings.Join(names, "|")
}

// Header kinds (the "kind" parameter of the header functions).
const (
	HeaderRequest          = 0
	HeaderResponse         = 1
	HeaderRequestTrailers  = 2
	HeaderResponseTrailers = 3
)

// Body kinds (the "kind" parameter of read_body and write_body).
const (
	BodyRequest  = 0
	BodyResponse = 1
)

// Log levels (the "level" parameter of log and log_enabled).
const (
	LogDebug = -1
	LogInfo  = 0
	LogWarn  = 1
	LogError = 2
	LogNone  = 3
)

// Limits on what a guest may make the host hold. Exceeding one traps.
const (
	// MaxHeaderField is the most bytes (name plus value) of one header
	// field a guest may set or add.
	MaxHeaderField = 64 << 10
	// MaxHeaderBytes is the most header bytes a guest may set or add in
	// one invocation.
	MaxHeaderBytes = 1 << 20
	// MaxBodyWrite is the most body bytes a guest may write in one
	// invocation.
	MaxBodyWrite = 64 << 20
	// MaxLogMessage is where a log message is cut.
	MaxLogMessage = 8 << 10
)

// ErrABI is wrapped by every trap caused by a guest breaking the ABI.
var ErrABI = errors.New("guest broke the http_handler ABI")

// Errors a body read ends with when the host stops it. The guest sees the
// body end early (read_body reports EOF) and finishes its call normally;
// the host then fails the request with the error, whatever the guest did,
// and the instance stays in service.
var (
	// ErrRequestBodyTooLarge: a buffered request body is over MaxBuffer.
	ErrRequestBodyTooLarge = errors.New("request body over max_buffer")
	// ErrResponseBodyTooLarge: the response body is over MaxBuffer.
	ErrResponseBodyTooLarge = errors.New("response body over max_buffer")
	// ErrRequestBodyTimeout: the client did not send the request body
	// before the call's deadline.
	ErrRequestBodyTimeout = errors.New("request body not received before the filter's deadline")
	// ErrResponseBodyTimeout: the next handler's response body did not
	// arrive before the call's deadline.
	ErrResponseBodyTimeout = errors.New("response body not received before the filter's deadline")
)

// HTTP is the request a guest reads and writes: the one declaration is
// runtime/api's, which the host's exchange embeds.
type HTTP = httpapi.HTTP

// ReadDeadliner and BodyBufferer are the optional interfaces of an HTTP
// (runtime/api).
type (
	ReadDeadliner = httpapi.ReadDeadliner
	BodyBufferer  = httpapi.BodyBufferer
)

const (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// signature is one host function's parameters and results.
type signature struct {
	params, results []api.ValueType
	names           []string
}

// Signatures is the import surface, by function name.
var signatures = map[string]signature{
	FuncEnableFeatures:     {[]api.ValueType{i32}, []api.ValueType{i32}, []string{"features"}},
	FuncGetConfig:          {[]api.ValueType{i32, i32}, []api.ValueType{i32}, []string{"buf", "buf_limit"}},
	FuncLogEnabled:         {[]api.ValueType{i32}, []api.ValueType{i32}, []string{"level"}},
	FuncLog:                {[]api.ValueType{i32, i32, i32}, nil, []string{"level", "message", "message_len"}},
	FuncGetMethod:          {[]api.ValueType{i32, i32}, []api.ValueType{i32}, []string{"buf", "buf_limit"}},
	FuncSetMethod:          {[]api.ValueType{i32, i32}, nil, []string{"method", "method_len"}},
	FuncGetURI:             {[]api.ValueType{i32, i32}, []api.ValueType{i32}, []string{"buf", "buf_limit"}},
	FuncSetURI:             {[]api.ValueType{i32, i32}, nil, []string{"uri", "uri_len"}},
	FuncGetProtocolVersion: {[]api.ValueType{i32, i32}, []api.ValueType{i32}, []string{"buf", "buf_limit"}},
	FuncGetHeaderNames:     {[]api.ValueType{i32, i32, i32}, []api.ValueType{i64}, []string{"kind", "buf", "buf_limit"}},
	FuncGetHeaderValues:    {[]api.ValueType{i32, i32, i32, i32, i32}, []api.ValueType{i64}, []string{"kind", "name", "name_len", "buf", "buf_limit"}},
	FuncSetHeaderValue:     {[]api.ValueType{i32, i32, i32, i32, i32}, nil, []string{"kind", "name", "name_len", "value", "value_len"}},
	FuncAddHeaderValue:     {[]api.ValueType{i32, i32, i32, i32, i32}, nil, []string{"kind", "name", "name_len", "value", "value_len"}},
	FuncRemoveHeader:       {[]api.ValueType{i32, i32, i32}, nil, []string{"kind", "name", "name_len"}},
	FuncReadBody:           {[]api.ValueType{i32, i32, i32}, []api.ValueType{i64}, []string{"kind", "buf", "buf_limit"}},
	FuncWriteBody:          {[]api.ValueType{i32, i32, i32}, nil, []string{"kind", "body", "body_len"}},
	FuncGetStatusCode:      {nil, []api.ValueType{i32}, nil},
	FuncSetStatusCode:      {[]api.ValueType{i32}, nil, []string{"status_code"}},
	FuncGetSourceAddr:      {[]api.ValueType{i32, i32}, []api.ValueType{i32}, []string{"buf", "buf_limit"}},
}
