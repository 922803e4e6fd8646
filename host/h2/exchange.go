package h2

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
)

// The stream as the exchange.Exchange its handler sees: the request's
// accessors and edits, its body as the read loop receives it, the
// response recorded for commit (stream.go), and the client's leaving
// (Context, ClientGone, AfterClientGone).
func (st *stream) Context() context.Context {
	if st.ctxOver != nil {
		return st.ctxOver
	}
	st.c.mu.Lock()
	st.ctxTaken = true
	st.c.mu.Unlock()
	return streamCtx{st}
}
func (st *stream) SetContext(ctx context.Context) { st.ctxOver = ctx }

// streamCtx is the stream as a context.Context: cancelled when the
// stream is reset or its connection ends. Done's channel is made only
// when asked for.
type streamCtx struct{ st *stream }

func (s streamCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (s streamCtx) Done() <-chan struct{} {
	st := s.st
	st.c.mu.Lock()
	defer st.c.mu.Unlock()
	if st.done == nil {
		st.done = make(chan struct{})
		if st.aborted {
			close(st.done)
		}
	}
	return st.done
}
func (s streamCtx) Err() error {
	st := s.st
	st.c.mu.Lock()
	defer st.c.mu.Unlock()
	if st.aborted {
		return context.Canceled
	}
	return nil
}
func (s streamCtx) Value(key any) any {
	if key == http.LocalAddrContextKey {
		return s.st.c.nc.LocalAddr()
	}
	return nil
}

func (st *stream) ClientGone() bool { return streamCtx{st}.Err() != nil }

func (st *stream) ClientWatch() func() bool {
	gen, c := st.gen, st.c
	c.mu.Lock()
	st.ctxTaken = true // the func may outlive the stream: see release
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return st.gen != gen || st.aborted || c.closed
	}
}

// goneWatch is one AfterClientGone registration; done (c.mu) once f has
// been started or the registration stopped.
type goneWatch struct {
	f    func()
	done bool
}

// AfterClientGone (exchange.AfterClientGone) runs f once the stream is
// reset by the client or its connection ends, or at once when it already
// has. The stop function touches only its own registration and the
// connection, so it stays safe after the stream is recycled.
func (st *stream) AfterClientGone(f func()) func() bool {
	c := st.c
	w := &goneWatch{f: f}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.aborted || c.closed {
		w.done = true
		go f()
	} else {
		// Stopped registrations are dropped here, so that a handler that
		// registers once per wait keeps a short list.
		live := st.gone[:0]
		for _, g := range st.gone {
			if !g.done {
				live = append(live, g)
			}
		}
		clear(st.gone[len(live):])
		st.gone = append(live, w)
	}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if w.done {
			return false
		}
		w.done = true
		return true
	}
}

func (st *stream) Method() []byte { return st.pseudoValue(0) }
func (st *stream) SetMethod(m string) {
	st.pidx[0] = int8(len(st.pseudo.kv))
	st.pseudo.add("", m, false)
}
func (st *stream) RequestURI() []byte { return st.pseudoValue(3) }
func (st *stream) Path() []byte {
	u := st.pseudoValue(3)
	if i := bytes.IndexByte(u, '?'); i >= 0 {
		return u[:i]
	}
	return u
}
func (st *stream) Query() []byte {
	u := st.pseudoValue(3)
	if i := bytes.IndexByte(u, '?'); i >= 0 {
		return u[i+1:]
	}
	return nil
}
func (st *stream) SetRequestURI(uri string) {
	st.pidx[3] = int8(len(st.pseudo.kv))
	st.pseudo.add("", uri, false)
}
func (st *stream) Host() []byte {
	if h := st.pseudoValue(2); h != nil {
		return h
	}
	return st.req.get("Host")
}
func (st *stream) Proto() string { return "HTTP/2.0" }
func (st *stream) IsTLS() bool   { return st.c.isTLS }
func (st *stream) RemoteAddr() net.Addr {
	if a := st.Client(); a != nil {
		return a
	}
	return st.c.nc.RemoteAddr()
}
func (st *stream) Peer() net.Addr                           { return st.c.nc.RemoteAddr() }
func (st *stream) LocalAddr() net.Addr                      { return st.c.nc.LocalAddr() }
func (st *stream) TLSConnectionState() *tls.ConnectionState { return st.c.tls }
func (st *stream) Multiplexed() bool                        { return true }

var emptyValue = []byte{}

var notImplemented = []byte("extended CONNECT: protocol not supported here\n")

func (st *stream) RequestHeader(name string) []byte {
	if equalFold(sb(name), "host") {
		if h := st.Host(); h != nil {
			return nonNil(h)
		}
		return nil
	}
	if v := st.req.get(name); v != nil {
		return nonNil(v)
	}
	return nil
}

func nonNil(b []byte) []byte {
	if b == nil || len(b) == 0 {
		return emptyValue
	}
	return b
}

func (st *stream) VisitRequestHeaders(fn func(name, value []byte)) {
	if h := st.pseudoValue(2); h != nil {
		fn(hostName, nonNil(h))
	}
	for i := range st.req.kv {
		fn(st.req.name(i), nonNil(st.req.value(i)))
	}
}

var hostName = []byte("Host")

func (st *stream) SetRequestHeader(name, value string) {
	if equalFold(sb(name), "host") {
		st.pidx[2] = int8(len(st.pseudo.kv))
		st.pseudo.add("", value, false)
		st.req.del("Host")
		return
	}
	st.req.set(name, value)
}
func (st *stream) AddRequestHeader(name, value string) { st.req.add(name, value, true) }
func (st *stream) DelRequestHeader(name string)        { st.req.del(name) }

func (st *stream) RequestBody() io.Reader {
	if st.body != nil {
		return st.body
	}
	return bodyOf{st}
}

func (st *stream) ContentLength() int64 { return st.declared }

func (st *stream) SetRequestBody(b []byte) {
	st.bodyReader.Reset(b)
	st.body = &st.bodyReader
	st.declared = int64(len(b))
	st.req.set("Content-Length", strconv.Itoa(len(b)))
}

// LimitRequestBody (exchange.LimitRequestBody) fails the body past n.
func (st *stream) LimitRequestBody(n int64) {
	st.body = exchange.NewLimitedBody(st.RequestBody(), n)
}

// SetReadDeadline bounds the waits for request body data.
func (st *stream) SetReadDeadline(t time.Time) error {
	st.readDL = t
	return nil
}

func (st *stream) VisitRequestTrailers(fn func(name, value []byte)) {
	st.c.mu.Lock()
	done := st.remoteDone
	st.c.mu.Unlock()
	if done {
		st.trailers.visit(fn)
	}
}

// bodyOf reads the request body as the read loop receives it.
type bodyOf struct{ st *stream }

var errReset = errors.New("h2: stream reset by the client")

func (b bodyOf) Read(p []byte) (int, error) {
	st := b.st
	c := st.c
	c.mu.Lock()
	var timer *time.Timer
	for len(st.in) == st.inOff {
		if st.remoteDone {
			c.mu.Unlock()
			return 0, io.EOF
		}
		if st.aborted {
			c.mu.Unlock()
			return 0, errReset
		}
		if st.tunnelShut {
			c.mu.Unlock()
			return 0, net.ErrClosed
		}
		dl := st.readDL
		if dl.IsZero() && c.o.ReadTimeout > 0 && !st.tunnel { // a tunnel may idle
			if timer == nil {
				dl = time.Now().Add(c.o.ReadTimeout)
				st.readDL = dl // per wait; cleared below
				defer func() { st.readDL = time.Time{} }()
			}
		}
		if !dl.IsZero() {
			if !time.Now().Before(dl) {
				c.mu.Unlock()
				return 0, os.ErrDeadlineExceeded
			}
			if timer == nil {
				timer = time.AfterFunc(time.Until(dl), func() {
					c.mu.Lock()
					st.cond.Broadcast()
					c.mu.Unlock()
				})
				defer timer.Stop()
			}
		}
		if len(p) == 0 {
			c.mu.Unlock()
			return 0, nil
		}
		st.cond.Wait()
	}
	n := copy(p, st.in[st.inOff:])
	st.inOff += n
	if st.inOff == len(st.in) {
		st.in, st.inOff = st.in[:0], 0
	}
	c.connHeld -= int32(n)
	c.returnConnLocked(int32(n))
	st.returnLocked(int32(n))
	flush := len(c.wbuf) > 0
	c.mu.Unlock()
	if flush {
		c.flush()
	}
	return n, nil
}

// Response.

func (st *stream) Status() int        { return st.status }
func (st *stream) SetStatus(code int) { st.status = code }
func (st *stream) ResponseHeader(name string) []byte {
	return st.resp.get(name)
}
func (st *stream) VisitResponseHeaders(fn func(name, value []byte)) { st.resp.visit(fn) }
func (st *stream) SetResponseHeader(name, value string)             { st.resp.set(name, value) }
func (st *stream) SetResponseHeaderBytes(name string, value []byte) {
	st.resp.set(name, bstr(value))
}
func (st *stream) AddResponseHeader(name, value string) {
	if singleValued(name) {
		st.resp.set(name, value)
		return
	}
	st.resp.add(name, value, true)
}
func (st *stream) AddResponseHeaderBytes(name, value []byte) {
	st.AddResponseHeader(bstr(name), bstr(value))
}
func (st *stream) DelResponseHeader(name string) { st.resp.del(name) }

// singleValued: the fields fasthttp keeps once; adding one replaces it on
// every engine.
func singleValued(name string) bool {
	return len(name) == 12 && equalFold(sb(name), "Content-Type") ||
		len(name) == 6 && equalFold(sb(name), "Server")
}

func (st *stream) SetBody(b []byte) {
	st.ResetBody()
	st.bodyRef = b
}

func (st *stream) Write(p []byte) (int, error) {
	if st.src.Pending() {
		st.ResetBody()
	}
	if len(st.own) == 0 && len(st.bodyRef) > 0 {
		st.own = append(st.own[:0], st.bodyRef...) // a body set, then written to
	}
	st.own = append(st.own, p...)
	st.bodyRef = st.own
	return len(p), nil
}

func (st *stream) SendFile(f *os.File, off, n int64) {
	st.ResetBody()
	if string(st.Method()) == http.MethodHead {
		f.Close()
		st.src.N = n
		st.src.File = nil
		st.src.Size = n
		st.src.Reader = eofReader{}
		return
	}
	st.src.File, st.src.Off, st.src.N = f, off, n
}

// eofReader stands for a HEAD response's body of known size.
type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

func (st *stream) Stream(size int64, fn func(w exchange.StreamWriter) error) {
	st.ResetBody()
	st.src.Stream, st.src.Size = fn, size
}

func (st *stream) SendReader(r io.Reader, size int64) {
	st.ResetBody()
	st.src.Reader, st.src.Size = r, size
}

func (st *stream) ResponseBody() []byte {
	if st.src.Pending() {
		return nil
	}
	return st.bodyRef
}

func (st *stream) ResetBody() {
	st.src.Release()
	st.bodyRef = nil
	st.own = st.own[:0]
}

func (st *stream) BufferBodyLimit(limit int64, deadline time.Time) (bool, error) {
	if string(st.Method()) == http.MethodHead {
		return true, nil
	}
	b, fits, ok, err := st.src.Buffer(limit, deadline)
	if !ok {
		return true, nil
	}
	st.ResetBody()
	if err != nil || !fits {
		return fits, err
	}
	st.own = append(st.own[:0], b...)
	st.bodyRef = st.own
	return true, nil
}

// Protocol is an extended CONNECT's :protocol (RFC 8441), nil for any
// other request (exchange.ConnectProtocol).
func (st *stream) Protocol() []byte {
	if string(st.Method()) != http.MethodConnect {
		return nil
	}
	return st.pseudoValue(4)
}
