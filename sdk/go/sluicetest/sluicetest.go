// Package sluicetest runs a Go sluice filter on the build machine, with no
// WebAssembly: a fake host plays the http_handler ABI against net/http
// values, so filter logic is tested with plain `go test`.
//
//	func TestRejectsAdmin(t *testing.T) {
//		f := sluicetest.New(t, `{"greeting": "hi"}`)
//		res := f.Do(httptest.NewRequest("GET", "/admin/x", nil))
//		if res.Next || res.Status != 403 {
//			t.Fatalf("got next=%v status=%d", res.Next, res.Status)
//		}
//	}
//
// The fake enforces the host's rules: changing the request after the next
// handler ran, or the response in the response hook without
// sluice.BufferResponse, panics like the real host traps. It holds one
// filter per test binary (the package's registered handlers), so tests
// using it must not run in parallel.
package sluicetest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/sdk/go/internal/abi"
)

// Filter is the filter registered by the package under test, set up with
// one config.
type Filter struct {
	// Next is the next handler (the upstream) for requests the filter
	// continues. Nil answers 200 with the body "next\n". Its response
	// is relayed as the server's proxy handler relays an upstream's:
	// response fields the filter set before continuing stay, and Next's
	// are added after them (Content-Type and Server: Next's replaces).
	Next http.Handler
	// RemoteAddr is the client's address for requests whose RemoteAddr is
	// empty. Default "192.0.2.1:1234".
	RemoteAddr string

	config   []byte
	features uint32
	logs     []string
}

// Log is one message the filter logged.
type Log struct {
	Level int32
	Msg   string
}

// New sets the filter up with config (JSON; "" means "{}") and fails t
// when its Setup functions return an error.
func New(t testing.TB, config string) *Filter {
	t.Helper()
	f, err := Load(config)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Load sets the filter up with config and returns the error of its Setup
// functions, for tests of config validation.
func Load(config string) (*Filter, error) {
	if abi.Guest.HandleRequest == nil {
		return nil, fmt.Errorf("sluicetest: package sluice is not linked in")
	}
	if config == "" {
		config = "{}"
	}
	f := &Filter{config: []byte(config), RemoteAddr: "192.0.2.1:1234"}
	abi.Guest.Reset()
	x := &exchange{f: f}
	abi.Current = x
	defer func() { abi.Current = nil }()
	if err := abi.Guest.Setup(); err != nil {
		return nil, err
	}
	f.features = x.features
	return f, nil
}

// Result is what a request did.
type Result struct {
	// Next is true when the filter continued to the next handler.
	Next bool
	// Request is the request as the next handler saw it (method, URL,
	// headers, body) when Next; otherwise as the filter left it.
	Request *http.Request
	// Status, Header and Body are the response sent to the client.
	Status int
	Header http.Header
	Body   []byte
	// Logs are the messages logged during this request.
	Logs []string
}

// Do runs r through the filter: the Handler, then, when it continues,
// Next and the response hook.
func (f *Filter) Do(r *http.Request) *Result {
	x := newExchange(f, r)
	abi.Current = x
	defer func() { abi.Current = nil }()

	ctxNext := abi.Guest.HandleRequest()
	res := &Result{Next: ctxNext&1 == 1}
	x.finishRequest()
	res.Request = x.outRequest()
	if res.Next {
		next := f.Next
		if next == nil {
			next = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "next\n") })
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, x.outRequest())
		x.status = rec.Code
		mergeNext(x.respHeader, rec.Result().Header)
		x.respBody = rec.Body.Bytes()
		x.phase = phaseResponse
		x.respRead, x.respWrote = 0, false // a new call: its first write replaces
		abi.Guest.HandleResponse(uint32(ctxNext>>32), 0)
	}
	res.Status = x.status
	res.Header = x.respHeader
	res.Body = x.respBody
	res.Logs = x.logs
	return res
}

// singleNext are the response fields the server's HTTP/1.1 engine keeps
// once: for these, the next handler's value replaces the one the filter
// set in its request phase.
var singleNext = []string{"Content-Type", "Server"}

// mergeNext adds the next handler's response fields (as sent: those it
// had when it wrote its header) to what the filter set in its request
// phase, as the server does with a proxied response (sdk/ABI.md,
// "Response headers set before the next handler"): the filter's values
// stay and come first, the next handler's follow, except for singleNext.
func mergeNext(dst, next http.Header) {
	for k, vs := range next {
		k = http.CanonicalHeaderKey(k)
		if slices.Contains(singleNext, k) {
			dst.Del(k)
		}
		for _, v := range vs {
			dst.Add(k, v)
		}
	}
}

// NewRequest is httptest.NewRequest with a string body ("" for none).
func NewRequest(method, target, body string) *http.Request {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	return httptest.NewRequest(method, target, rd)
}

type phase int

const (
	phaseRequest phase = iota
	phaseResponse
)

// exchange is the fake host: one request and its response.
type exchange struct {
	f        *Filter
	phase    phase
	features uint32
	logs     []string

	method, uri, proto, addr string
	host                     string
	reqHeader                http.Header
	reqBody                  io.Reader
	reqRead                  []byte
	reqOut                   []byte
	reqWritten               bool

	status     int
	respHeader http.Header
	respBody   []byte
	respRead   int
	respWrote  bool
}

func newExchange(f *Filter, r *http.Request) *exchange {
	uri := r.RequestURI
	if uri == "" {
		uri = r.URL.RequestURI()
	}
	addr := r.RemoteAddr
	if addr == "" {
		addr = f.RemoteAddr
	}
	h := r.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if r.Host != "" && h.Get("Host") == "" {
		h.Set("Host", r.Host)
	}
	body := r.Body
	if body == nil {
		body = http.NoBody
	}
	return &exchange{
		f: f, features: f.features,
		method: r.Method, uri: uri, proto: r.Proto, addr: addr,
		reqHeader: h, reqBody: body,
		status: 200, respHeader: http.Header{},
	}
}

// finishRequest applies what handle_request did to the request body.
func (x *exchange) finishRequest() {
	switch {
	case x.reqWritten:
		x.reqBody = bytes.NewReader(x.reqOut)
	case x.features&abi.FeatureBufferRequest != 0:
		rest, _ := io.ReadAll(x.reqBody)
		x.reqBody = bytes.NewReader(append(x.reqRead, rest...))
	}
}

func (x *exchange) outRequest() *http.Request {
	var body []byte
	if x.reqBody != nil {
		body, _ = io.ReadAll(x.reqBody)
		x.reqBody = bytes.NewReader(body)
	}
	r := httptest.NewRequest(x.method, x.uri, bytes.NewReader(body))
	r.Header = x.reqHeader.Clone()
	if h := r.Header.Get("Host"); h != "" {
		r.Host = h
	}
	r.Header.Del("Host")
	r.RemoteAddr = x.addr
	return r
}

func fail(format string, args ...any) {
	panic(fmt.Sprintf("sluicetest: the host would trap: "+format, args...))
}

func (x *exchange) mustRequest(fn, what string) {
	if x.phase != phaseRequest {
		fail("%s: can't change %s after the next handler ran", fn, what)
	}
}

func (x *exchange) mustBuffered(fn, what string) {
	if x.phase == phaseResponse && x.features&abi.FeatureBufferResponse == 0 {
		fail("%s: %s after the next handler needs BufferResponse", fn, what)
	}
}

func (x *exchange) EnableFeatures(f uint32) uint32 {
	x.features |= f & (abi.FeatureBufferRequest | abi.FeatureBufferResponse)
	return x.features
}

func (x *exchange) GetConfig() []byte { return slices.Clone(x.f.config) }

func (x *exchange) LogEnabled(level int32) bool { return level >= -1 && level <= 2 }

func (x *exchange) Log(level int32, msg string) {
	names := map[int32]string{-1: "DEBUG", 0: "INFO", 1: "WARN", 2: "ERROR"}
	x.logs = append(x.logs, names[level]+" "+msg)
}

func (x *exchange) GetMethod() string { return x.method }

func (x *exchange) SetMethod(m string) {
	x.mustRequest("set_method", "the method")
	if m == "" || strings.ContainsAny(m, " \t\r\n") {
		fail("set_method: invalid method %q", m)
	}
	x.method = m
}

func (x *exchange) GetURI() string { return x.uri }

func (x *exchange) SetURI(u string) {
	x.mustRequest("set_uri", "the URI")
	if u == "" {
		u = "/"
	}
	if strings.ContainsAny(u, " \t\r\n") || (u[0] != '/' && u != "*" && !strings.Contains(u, "://")) {
		fail("set_uri: invalid request URI %q", u)
	}
	x.uri = u
}

func (x *exchange) GetProtocolVersion() string { return x.proto }
func (x *exchange) GetSourceAddr() string      { return x.addr }

func (x *exchange) header(kind uint32) http.Header {
	switch kind {
	case abi.HeaderRequest:
		return x.reqHeader
	case abi.HeaderResponse:
		return x.respHeader
	}
	return http.Header{} // trailers: always empty here, as on sluice
}

func (x *exchange) GetHeaderNames(kind uint32) []string {
	var names []string
	for k := range x.header(kind) {
		names = append(names, strings.ToLower(k))
	}
	slices.Sort(names)
	return names
}

func (x *exchange) GetHeaderValues(kind uint32, name string) []string {
	if name == "" {
		fail("get_header_values: empty header name")
	}
	return slices.Clone(x.header(kind).Values(name))
}

func (x *exchange) checkSet(fn string, kind uint32, name, value string) {
	switch kind {
	case abi.HeaderRequest:
		x.mustRequest(fn, "request headers")
	case abi.HeaderResponse:
		x.mustBuffered(fn, "changing response headers")
	default:
		fail("%s: trailers are not supported", fn)
	}
	if name == "" || strings.ContainsAny(name, " \t\r\n:") {
		fail("%s: invalid header name %q", fn, name)
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		fail("%s: header %q: value contains CR, LF or NUL", fn, name)
	}
}

func (x *exchange) SetHeaderValue(kind uint32, name, value string) {
	x.checkSet("set_header_value", kind, name, value)
	x.header(kind).Set(name, value)
}

func (x *exchange) AddHeaderValue(kind uint32, name, value string) {
	x.checkSet("add_header_value", kind, name, value)
	x.header(kind).Add(name, value)
}

func (x *exchange) RemoveHeader(kind uint32, name string) {
	switch kind {
	case abi.HeaderRequest:
		x.mustRequest("remove_header", "request headers")
	case abi.HeaderResponse:
		x.mustBuffered("remove_header", "changing response headers")
	}
	x.header(kind).Del(name)
}

func (x *exchange) ReadBody(kind uint32, p []byte) (int, bool) {
	if len(p) == 0 {
		fail("read_body: buf_limit is zero")
	}
	switch kind {
	case abi.BodyRequest:
		if x.phase == phaseResponse && x.features&abi.FeatureBufferRequest == 0 {
			fail("read_body: reading the request body after the next handler needs BufferRequest")
		}
		n, err := io.ReadFull(x.reqBody, p)
		x.reqRead = append(x.reqRead, p[:n]...)
		return n, err != nil
	case abi.BodyResponse:
		x.mustBuffered("read_body", "reading the response body")
		n := copy(p, x.respBody[x.respRead:])
		x.respRead += n
		return n, x.respRead == len(x.respBody)
	}
	fail("read_body: unknown body kind %d", kind)
	return 0, false
}

func (x *exchange) WriteBody(kind uint32, p []byte) {
	switch kind {
	case abi.BodyRequest:
		x.mustRequest("write_body", "the request body")
		if !x.reqWritten {
			x.reqWritten, x.reqOut = true, nil
		}
		x.reqOut = append(x.reqOut, p...)
	case abi.BodyResponse:
		x.mustBuffered("write_body", "writing the response body")
		if !x.respWrote {
			x.respWrote, x.respBody = true, nil
		}
		x.respBody = append(x.respBody, p...)
	default:
		fail("write_body: unknown body kind %d", kind)
	}
}

func (x *exchange) GetStatusCode() uint32 { return uint32(x.status) }

func (x *exchange) SetStatusCode(code uint32) {
	x.mustBuffered("set_status_code", "setting the status code")
	if code < 100 || code > 999 {
		fail("set_status_code: invalid status code %d", code)
	}
	x.status = int(code)
}
