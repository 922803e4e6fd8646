package sluice

import (
	"io"
	"net/url"
	"strings"

	"github.com/sluicehq/sluice/sdk/go/internal/abi"
)

type request struct{ id uint32 }

// Request is the request being handled. Its methods call the host: each
// call reads or writes the live request, so read a value once and keep it
// in a local variable in a hot path.
type Request struct{ r *request }

// Method returns the request method ("GET").
func (Request) Method() string { return abi.Current.GetMethod() }

// SetMethod replaces the method. Only before the next handler.
func (Request) SetMethod(m string) { abi.Current.SetMethod(m) }

// URI returns the path and query as sent: "/a/b?x=1".
func (Request) URI() string { return abi.Current.GetURI() }

// SetURI replaces path and query ("/a/b?x=1"). Only before the next
// handler.
func (Request) SetURI(uri string) { abi.Current.SetURI(uri) }

// Path returns the URI up to any '?', still percent-encoded.
func (q Request) Path() string {
	u := q.URI()
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[:i]
	}
	return u
}

// RawQuery returns the URI after the first '?', or "".
func (q Request) RawQuery() string {
	u := q.URI()
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[i+1:]
	}
	return ""
}

// Query returns the first value of the query parameter name, decoded,
// and whether it was present.
func (q Request) Query(name string) (string, bool) {
	return QueryValue(q.RawQuery(), name)
}

// QueryValue finds name in a raw query string ("a=1&b=2") and returns its
// first value, decoded.
func QueryValue(rawQuery, name string) (string, bool) {
	for rawQuery != "" {
		var kv string
		kv, rawQuery, _ = strings.Cut(rawQuery, "&")
		k, v, _ := strings.Cut(kv, "=")
		if k != name {
			if dk, err := url.QueryUnescape(k); err != nil || dk != name {
				continue
			}
		}
		dv, err := url.QueryUnescape(v)
		if err != nil {
			return v, true
		}
		return dv, true
	}
	return "", false
}

// Protocol returns "HTTP/1.1" or "HTTP/2.0".
func (Request) Protocol() string { return abi.Current.GetProtocolVersion() }

// SourceAddr returns the client's address, "ip:port".
func (Request) SourceAddr() string { return abi.Current.GetSourceAddr() }

// Header returns the request headers.
func (Request) Header() Header { return Header{abi.HeaderRequest} }

// Body returns the request body. Reading it consumes it unless
// BufferRequest is enabled; writing it (before the next handler)
// replaces it.
func (Request) Body() Body { return Body{abi.BodyRequest} }

// ID returns the number that identifies this request to the response
// hook (the ABI's reqCtx), assigning one when needed. Use it to key state
// kept outside Set and Value.
func (q Request) ID() uint32 {
	if q.r == nil {
		return 0
	}
	if q.r.id == 0 {
		q.r.id = newID()
	}
	return q.r.id
}

// Set keeps v under key for this request until its response hook
// returned (or the request ended without one). An instance serves other
// requests while this one waits on its upstream: keep per-request state
// here, not in package variables.
func (q Request) Set(key string, v any) {
	id := q.ID()
	m := state[id]
	if m == nil {
		m = map[string]any{}
		state[id] = m
	}
	m[key] = v
}

// Value returns what Set kept under key for this request, or nil.
func (q Request) Value(key string) any {
	if q.r == nil || q.r.id == 0 {
		return nil
	}
	return state[q.r.id][key]
}

// Response is the response: the one the filter writes to answer a request
// itself (in the Handler, returning false), or the next handler's (in the
// ResponseHandler, with BufferResponse).
type Response struct{}

// Status returns the response status code (200 until set).
func (Response) Status() int { return int(abi.Current.GetStatusCode()) }

// SetStatus sets the status code.
func (Response) SetStatus(code int) { abi.Current.SetStatusCode(uint32(code)) }

// Header returns the response headers.
func (Response) Header() Header { return Header{abi.HeaderResponse} }

// Body returns the response body. The first write replaces any body.
func (Response) Body() Body { return Body{abi.BodyResponse} }

// Header is a set of request or response header fields. Names are
// case-insensitive; Names returns them in lower case.
type Header struct{ kind uint32 }

// Get returns the first value of name, or "".
func (h Header) Get(name string) string {
	v := abi.Current.GetHeaderValues(h.kind, name)
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// Lookup returns the first value of name and whether it is present.
func (h Header) Lookup(name string) (string, bool) {
	v := abi.Current.GetHeaderValues(h.kind, name)
	if len(v) == 0 {
		return "", false
	}
	return v[0], true
}

// Values returns every value of name, in order.
func (h Header) Values(name string) []string { return abi.Current.GetHeaderValues(h.kind, name) }

// Names returns the distinct field names, in lower case.
func (h Header) Names() []string { return abi.Current.GetHeaderNames(h.kind) }

// Set replaces every value of name with value.
func (h Header) Set(name, value string) { abi.Current.SetHeaderValue(h.kind, name, value) }

// Add appends a value to name.
func (h Header) Add(name, value string) { abi.Current.AddHeaderValue(h.kind, name, value) }

// Remove deletes every value of name.
func (h Header) Remove(name string) { abi.Current.RemoveHeader(h.kind, name) }

// Body is a request or response body: an io.Reader and an io.Writer.
type Body struct{ kind uint32 }

// Read reads from the body; it returns io.EOF at its end.
func (b Body) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, eof := abi.Current.ReadBody(b.kind, p)
	if eof && n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// ReadAll reads the rest of the body.
func (b Body) ReadAll() []byte {
	var out []byte
	chunk := make([]byte, 4096)
	for {
		n, eof := abi.Current.ReadBody(b.kind, chunk)
		out = append(out, chunk[:n]...)
		if eof {
			return out
		}
	}
}

// Write appends p to the body; the first write replaces what was there.
func (b Body) Write(p []byte) (int, error) {
	abi.Current.WriteBody(b.kind, p)
	return len(p), nil
}

// WriteString appends s to the body; the first write replaces what was
// there.
func (b Body) WriteString(s string) (int, error) { return b.Write([]byte(s)) }

var (
	_ io.Reader       = Body{}
	_ io.Writer       = Body{}
	_ io.StringWriter = Body{}
)
