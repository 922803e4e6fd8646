// Package filtertest tests a filter module without a server, as
// net/http/httptest tests a handler: Exchange is an in-memory request and
// the response built for it (a runtime.HTTP), and Load and Do run a module
// through the real runtime, one request in, what the filter did out.
//
// It is the one in-memory HTTP for the project's tests too: the runtime's,
// the ABI's, the first-party filters', the examples', and `sluice filter
// run`. It sits on no request path; it imports the runtime and nothing of
// the host.
package filtertest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/sluicehq/sluice/runtime"
)

// Field is one header field.
type Field struct{ Name, Value string }

// Exchange is an in-memory request and the response built for it. It
// implements runtime.HTTP. The zero value is a GET of "" over HTTP/1.1
// from 192.0.2.1:1234, answered 200 with no header and no body.
type Exchange struct {
	Ctx      context.Context // nil means context.Background()
	Meth     string          // "" means "GET"
	URI      string
	Protocol string // "" means "HTTP/1.1"
	TLS      bool
	Remote   string    // "ip:port"; "" means "192.0.2.1:1234"
	ReqHdr   []Field   // request header fields, in order
	ReqBody  io.Reader // nil means empty

	StatusCode int // 0 means 200
	RespHdr    []Field
	RespBody   bytes.Buffer
}

// NewExchange returns a request of method for uri with header pairs
// ("Name", "value", ...).
func NewExchange(method, uri string, headers ...string) *Exchange {
	x := &Exchange{Meth: method, URI: uri}
	for i := 0; i+1 < len(headers); i += 2 {
		x.ReqHdr = append(x.ReqHdr, Field{headers[i], headers[i+1]})
	}
	return x
}

// Reset makes x a fresh GET of uri, keeping its buffers (for benchmarks).
func (x *Exchange) Reset(uri string) {
	x.Ctx, x.Meth, x.URI, x.StatusCode, x.ReqBody = nil, "", uri, 0, nil
	x.ReqHdr, x.RespHdr = x.ReqHdr[:0], x.RespHdr[:0]
	x.RespBody.Reset()
}

// Header returns the first value of a request header field, or "".
func (x *Exchange) Header(name string) string { return string(get(x.ReqHdr, name)) }

// RespHeader returns the first value of a response header field, or "".
func (x *Exchange) RespHeader(name string) string { return string(get(x.RespHdr, name)) }

func (x *Exchange) Context() context.Context {
	if x.Ctx == nil {
		return context.Background()
	}
	return x.Ctx
}
func (x *Exchange) Method() []byte {
	if x.Meth == "" {
		return []byte("GET")
	}
	return []byte(x.Meth)
}
func (x *Exchange) SetMethod(m string)       { x.Meth = m }
func (x *Exchange) RequestURI() []byte       { return []byte(x.URI) }
func (x *Exchange) SetRequestURI(uri string) { x.URI = uri }
func (x *Exchange) Proto() string {
	if x.Protocol == "" {
		return "HTTP/1.1"
	}
	return x.Protocol
}
func (x *Exchange) IsTLS() bool { return x.TLS }
func (x *Exchange) RemoteAddr() net.Addr {
	s := x.Remote
	if s == "" {
		s = "192.0.2.1:1234"
	}
	if a, err := net.ResolveTCPAddr("tcp", s); err == nil {
		return a
	}
	return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1234}
}

func get(h []Field, name string) []byte {
	for _, f := range h {
		if strings.EqualFold(f.Name, name) {
			return []byte(f.Value)
		}
	}
	return nil
}

func visit(h []Field, fn func(name, value []byte)) {
	for _, f := range h {
		fn([]byte(f.Name), []byte(f.Value))
	}
}

func del(h []Field, name string) []Field {
	out := h[:0]
	for _, f := range h {
		if !strings.EqualFold(f.Name, name) {
			out = append(out, f)
		}
	}
	return out
}

// set replaces the first field named name in place and drops the others.
func set(h []Field, name, value string) []Field {
	for i, f := range h {
		if strings.EqualFold(f.Name, name) {
			h[i].Value = value
			return append(h[:i+1], del(h[i+1:], name)...)
		}
	}
	return append(h, Field{name, value})
}

func (x *Exchange) RequestHeader(name string) []byte                { return get(x.ReqHdr, name) }
func (x *Exchange) VisitRequestHeaders(fn func(name, value []byte)) { visit(x.ReqHdr, fn) }
func (x *Exchange) SetRequestHeader(name, value string)             { x.ReqHdr = set(x.ReqHdr, name, value) }
func (x *Exchange) AddRequestHeader(name, value string) {
	x.ReqHdr = append(x.ReqHdr, Field{name, value})
}
func (x *Exchange) DelRequestHeader(name string) { x.ReqHdr = del(x.ReqHdr, name) }
func (x *Exchange) RequestBody() io.Reader {
	if x.ReqBody == nil {
		x.ReqBody = bytes.NewReader(nil)
	}
	return x.ReqBody
}
func (x *Exchange) SetRequestBody(b []byte) { x.ReqBody = bytes.NewReader(b) }

func (x *Exchange) Status() int {
	if x.StatusCode == 0 {
		return 200
	}
	return x.StatusCode
}
func (x *Exchange) SetStatus(code int)                               { x.StatusCode = code }
func (x *Exchange) ResponseHeader(name string) []byte                { return get(x.RespHdr, name) }
func (x *Exchange) VisitResponseHeaders(fn func(name, value []byte)) { visit(x.RespHdr, fn) }
func (x *Exchange) SetResponseHeader(name, value string)             { x.RespHdr = set(x.RespHdr, name, value) }
func (x *Exchange) AddResponseHeader(name, value string) {
	x.RespHdr = append(x.RespHdr, Field{name, value})
}
func (x *Exchange) DelResponseHeader(name string) { x.RespHdr = del(x.RespHdr, name) }
func (x *Exchange) ResponseBody() []byte          { return x.RespBody.Bytes() }
func (x *Exchange) SetBody(b []byte)              { x.RespBody.Reset(); x.RespBody.Write(b) }
func (x *Exchange) ResetBody()                    { x.RespBody.Reset() }
func (x *Exchange) Write(p []byte) (int, error)   { return x.RespBody.Write(p) }

var _ runtime.HTTP = (*Exchange)(nil)

// Filter is one compiled and instantiated filter module.
type Filter struct {
	Engine *runtime.Engine
	Module *runtime.Module
	*runtime.Filter
	// Instantiate is how long NewFilter took to start the pool.
	Instantiate time.Duration

	ownEngine bool
}

// Load compiles wasm on a new engine and starts a filter named name with
// opts. A nil log discards guest and runtime logs. cacheDir is where
// compiled code is kept across runs, as runtime.EngineOptions.CacheDir:
// "" means the runtime's default (under os.UserCacheDir), worked out
// there and nowhere else. For memory only, make an engine with
// NoDiskCache and use LoadOn.
func Load(ctx context.Context, name string, wasm []byte, opts runtime.FilterOptions, log *slog.Logger, cacheDir string) (*Filter, error) {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	e, err := runtime.NewEngine(ctx, runtime.EngineOptions{CacheDir: cacheDir, Logger: log})
	if err != nil {
		return nil, err
	}
	f, err := LoadOn(ctx, e, name, wasm, opts)
	if err != nil {
		e.Close(ctx)
		return nil, err
	}
	f.ownEngine = true
	return f, nil
}

// LoadOn compiles wasm on e (which caches compiled modules by digest) and
// starts a filter named name with opts.
func LoadOn(ctx context.Context, e *runtime.Engine, name string, wasm []byte, opts runtime.FilterOptions) (*Filter, error) {
	m, err := e.Compile(ctx, wasm)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	f, err := e.NewFilter(ctx, name, m, opts)
	d := time.Since(start)
	if err != nil {
		m.Close(ctx)
		return nil, err
	}
	return &Filter{Engine: e, Module: m, Filter: f, Instantiate: d}, nil
}

// Close closes the filter, and the engine when Load made it.
func (f *Filter) Close() error {
	ctx := context.Background()
	err := f.Filter.Close(ctx)
	f.Module.Close(ctx)
	if f.ownEngine {
		if cerr := f.Engine.Close(ctx); err == nil {
			err = cerr
		}
	}
	return err
}

// Result is what a filter did to one request.
type Result struct {
	// Continued is true when handle_request let the next handler run.
	Continued bool
	// Request and Response are the times of the two guest calls (zero
	// Response when there was none).
	Request, Response time.Duration
	// Features were in effect for the request.
	Features runtime.Features
}

// Next is the next handler in Do: it writes the upstream's response into
// x. Nil answers 200 with "next\n".
type Next func(x *Exchange)

// Do runs x through the filter: handle_request, then, when it continued,
// next and handle_response. x holds the outcome.
func (f *Filter) Do(x *Exchange, next Next) (Result, error) {
	var res Result
	start := time.Now()
	call, err := f.HandleRequest(x)
	res.Request = time.Since(start)
	if err != nil {
		return res, err
	}
	if call == nil {
		return res, nil
	}
	res.Continued, res.Features = true, call.Features()
	if next == nil {
		next = func(x *Exchange) { x.RespBody.WriteString("next\n") }
	}
	next(x)
	start = time.Now()
	err = call.HandleResponse(x, false)
	res.Response = time.Since(start)
	if err != nil {
		return res, fmt.Errorf("handle_response: %w", err)
	}
	return res, nil
}
