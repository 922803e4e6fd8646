package sluice

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/sluicehq/sluice/sdk/go/internal/abi"
)

// Handler decides what happens to a request. It may read and rewrite the
// request, or answer it through resp. Returning true runs the next handler
// (later filters, then the route's static or proxy handler); returning
// false sends resp as it stands.
type Handler func(req Request, resp Response) (next bool)

// ResponseHandler runs after the next handler for requests whose Handler
// returned true. isError is true when the host failed to produce a
// response (the upstream was unreachable, say): clean up, change nothing.
//
// To change the status, headers or body of the response here, enable
// BufferResponse first (in Setup, or in the Handler for this request).
type ResponseHandler func(req Request, resp Response, isError bool)

// Features are host capabilities a filter asks for with EnableFeatures.
type Features uint32

const (
	// BufferRequest keeps the request body readable by the next handler
	// after the filter read it.
	BufferRequest Features = abi.FeatureBufferRequest
	// BufferResponse holds the next handler's response until the
	// ResponseHandler returned, so it may change status, headers and body.
	// It costs a copy of every response body: enable it only when needed.
	BufferResponse Features = abi.FeatureBufferResponse
	// Trailers asks for trailers. sluice does not grant it.
	Trailers Features = abi.FeatureTrailers
)

var (
	handler     Handler
	respHandler ResponseHandler
	setups      []func() error
	features    Features

	// lastCtx numbers requests that have a response hook or state; the
	// number travels to handle_response as the ABI's reqCtx.
	lastCtx uint32
	state   = map[uint32]map[string]any{}
	cur     *request // the request being handled, when it has an ID
)

func init() {
	abi.Guest.HandleRequest = handleRequest
	abi.Guest.HandleResponse = handleResponse
	abi.Guest.Setup = runSetup
	abi.Guest.Reset = func() {
		features, lastCtx, cur = 0, 0, nil
		clear(state)
	}
}

// Handle registers the request handler. Call it from init.
func Handle(h Handler) { handler = h }

// HandleResponse registers a hook that runs after the next handler for
// every request the Handler continued. Call it from init.
func HandleResponse(h ResponseHandler) { respHandler = h }

// Setup registers fn to run once per instance, before any request: the
// place to read Config and prepare what every request shares. When it
// returns an error the instance fails to start, so the filter fails to
// load and the operator sees the error (config mistakes surface at load,
// not on the first request). Call it from init.
func Setup(fn func() error) {
	setups = append(setups, fn)
	if wasm {
		// A reactor runs init inside _initialize: the host is there now.
		if err := fn(); err != nil {
			msg := "filter setup: " + err.Error()
			abi.Current.Log(int32(LevelError), msg)
			panic(msg)
		}
	}
}

func runSetup() error {
	for _, fn := range setups {
		if err := fn(); err != nil {
			return fmt.Errorf("filter setup: %w", err)
		}
	}
	return nil
}

// EnableFeatures asks the host for features and returns those now
// enabled. Called from Setup it applies to every request; called from a
// Handler, to that request only.
func EnableFeatures(f Features) Features {
	got := Features(abi.Current.EnableFeatures(uint32(f)))
	features |= got
	return got
}

// ConfigBytes returns the filter's config as the host holds it: the HCL
// `config` attribute encoded as JSON ("{}" when absent).
func ConfigBytes() []byte { return abi.Current.GetConfig() }

// Config decodes the filter's JSON config into v, a pointer to a struct
// with json tags. Fields the struct does not have are an error, so an
// operator's typo fails the filter at load instead of being ignored.
func Config(v any) error {
	b := bytes.TrimSpace(ConfigBytes())
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// Level is a log level.
type Level int32

// Log levels, as numbered by the ABI.
const (
	LevelDebug Level = -1
	LevelInfo  Level = 0
	LevelWarn  Level = 1
	LevelError Level = 2
)

// LogEnabled reports whether the host keeps messages at level: check it
// before building an expensive message.
func LogEnabled(level Level) bool { return abi.Current.LogEnabled(int32(level)) }

// Log sends msg to the server's log, tagged with the filter's name.
func Log(level Level, msg string) { abi.Current.Log(int32(level), msg) }

// Logf formats and logs a message when level is enabled.
func Logf(level Level, format string, args ...any) {
	if LogEnabled(level) {
		Log(level, fmt.Sprintf(format, args...))
	}
}

// LogKV logs msg with key/value fields, when level is enabled: kv is
// key, value, key, value…; a key without a value gets "". The fields are
// written after the message in logfmt, the same in every SDK (see
// sdk/README.md): `denied path=/admin/x reason="no token"`. A value is
// quoted when it is empty or holds a space, '=', '"' or a control byte.
func LogKV(level Level, msg string, kv ...string) {
	if !LogEnabled(level) {
		return
	}
	b := make([]byte, 0, len(msg)+16*len(kv))
	b = append(b, msg...)
	for i := 0; i < len(kv); i += 2 {
		v := ""
		if i+1 < len(kv) {
			v = kv[i+1]
		}
		b = append(b, ' ')
		b = appendLogfmt(b, kv[i])
		b = append(b, '=')
		b = appendLogfmt(b, v)
	}
	Log(level, string(b))
}

// appendLogfmt appends s, quoted when it needs to be.
func appendLogfmt(b []byte, s string) []byte {
	quote := s == ""
	for i := 0; i < len(s) && !quote; i++ {
		c := s[i]
		quote = c <= ' ' || c == '=' || c == '"' || c == 0x7f
	}
	if !quote {
		return append(b, s...)
	}
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c < ' ' || c == 0x7f:
			b = append(b, '\\', 'x', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

func handleRequest() uint64 {
	if handler == nil {
		return 1
	}
	r := &request{}
	cur = r
	next := handler(Request{r}, Response{})
	cur = nil
	if !next {
		delete(state, r.id)
		return 0
	}
	if respHandler == nil {
		delete(state, r.id)
		return 1
	}
	if r.id == 0 {
		r.id = newID()
	}
	return uint64(r.id)<<32 | 1
}

func handleResponse(reqCtx, isError uint32) {
	if respHandler == nil {
		return
	}
	r := &request{id: reqCtx}
	defer delete(state, reqCtx)
	respHandler(Request{r}, Response{}, isError != 0)
}

func newID() uint32 {
	lastCtx++
	if lastCtx == 0 {
		lastCtx = 1
	}
	return lastCtx
}
