// Package fakehttp is an in-memory request and response implementing
// runtime.HTTP, for tests and benchmarks that need no network.
package fakehttp

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
)

// Field is one header field.
type Field struct{ Name, Value string }

// Exchange is a request and the response being built for it. The zero
// value is a GET / over HTTP/1.1 with status 200.
type Exchange struct {
	Ctx         context.Context
	Meth        string
	URI         string
	Protocol    string
	TLS         bool
	Remote      net.Addr
	ReqHeaders  []Field
	ReqBody     io.Reader
	RespStatus  int
	RespHeaders []Field
	Body        bytes.Buffer
}

// New returns a GET of uri with the given request header pairs.
func New(uri string, headers ...string) *Exchange {
	x := &Exchange{URI: uri}
	for i := 0; i+1 < len(headers); i += 2 {
		x.ReqHeaders = append(x.ReqHeaders, Field{headers[i], headers[i+1]})
	}
	return x
}

// Reset makes x a fresh GET of uri, keeping its buffers.
func (x *Exchange) Reset(uri string) {
	x.Meth, x.URI, x.RespStatus = "", uri, 0
	x.ReqHeaders, x.RespHeaders = x.ReqHeaders[:0], x.RespHeaders[:0]
	x.ReqBody = nil
	x.Body.Reset()
}

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
	if x.Remote == nil {
		return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
	}
	return x.Remote
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

func (x *Exchange) RequestHeader(name string) []byte                { return get(x.ReqHeaders, name) }
func (x *Exchange) VisitRequestHeaders(fn func(name, value []byte)) { visit(x.ReqHeaders, fn) }
func (x *Exchange) SetRequestHeader(name, value string) {
	x.ReqHeaders = append(del(x.ReqHeaders, name), Field{name, value})
}
func (x *Exchange) AddRequestHeader(name, value string) {
	x.ReqHeaders = append(x.ReqHeaders, Field{name, value})
}
func (x *Exchange) DelRequestHeader(name string) { x.ReqHeaders = del(x.ReqHeaders, name) }
func (x *Exchange) RequestBody() io.Reader {
	if x.ReqBody == nil {
		return bytes.NewReader(nil)
	}
	return x.ReqBody
}
func (x *Exchange) SetRequestBody(b []byte) { x.ReqBody = bytes.NewReader(b) }

func (x *Exchange) Status() int {
	if x.RespStatus == 0 {
		return 200
	}
	return x.RespStatus
}
func (x *Exchange) SetStatus(code int)                               { x.RespStatus = code }
func (x *Exchange) ResponseHeader(name string) []byte                { return get(x.RespHeaders, name) }
func (x *Exchange) VisitResponseHeaders(fn func(name, value []byte)) { visit(x.RespHeaders, fn) }
func (x *Exchange) SetResponseHeader(name, value string) {
	x.RespHeaders = append(del(x.RespHeaders, name), Field{name, value})
}
func (x *Exchange) AddResponseHeader(name, value string) {
	x.RespHeaders = append(x.RespHeaders, Field{name, value})
}
func (x *Exchange) DelResponseHeader(name string) { x.RespHeaders = del(x.RespHeaders, name) }
func (x *Exchange) ResponseBody() []byte          { return x.Body.Bytes() }
func (x *Exchange) SetBody(b []byte)              { x.Body.Reset(); x.Body.Write(b) }
func (x *Exchange) ResetBody()                    { x.Body.Reset() }
func (x *Exchange) Write(p []byte) (int, error)   { return x.Body.Write(p) }
