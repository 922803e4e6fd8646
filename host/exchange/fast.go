package exchange

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"os"
	"sync"

	"github.com/sluicehq/sluice/host/internal/lazyconn"
	"github.com/sluicehq/sluice/host/internal/sockpeek"
	"github.com/valyala/fasthttp"
)

// fastExchange adapts a fasthttp.RequestCtx. It is pooled: one per
// request, zero allocations on the fast path.
type fastExchange struct {
	ctx    *fasthttp.RequestCtx
	cctx   context.Context
	tls    bool
	stream bool       // body is a file or stream, not a buffer
	hdr    fastHeader // the request header as sent (fasthdr.go)
	conn              // the client address the front door decided (conn.go)
	rawPaths
}

var fastPool = sync.Pool{New: func() any { return new(fastExchange) }}

// Fast returns a fasthttp request handler that serves every request with h
// and renders a returned error with onError. isTLS tells whether the
// listener behind the server terminates TLS.
func Fast(h Handler, onError func(Exchange, error), isTLS bool) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		x := fastPool.Get().(*fastExchange)
		x.ctx, x.tls, x.stream, x.cctx = ctx, isTLS || ctx.IsTLS(), false, nil
		if err := h.ServeExchange(x); err != nil {
			onError(x, err)
		}
		x.finish()
		hdr := x.hdr
		hdr.reset()
		*x = fastExchange{hdr: hdr} // the header's buffers survive the pool
		fastPool.Put(x)
	}
}

func (x *fastExchange) finish() {
	if x.ctx.IsHead() && !x.stream {
		// fasthttp writes Content-Length from the body for HEAD and skips it.
		return
	}
}

func (x *fastExchange) Context() context.Context {
	if x.cctx != nil {
		return x.cctx
	}
	return x.ctx
}
func (x *fastExchange) SetContext(c context.Context) { x.cctx = c }

func (x *fastExchange) Method() []byte { return x.ctx.Method() }
func (x *fastExchange) SetMethod(m string) {
	x.ctx.Request.Header.SetMethod(m)
}
func (x *fastExchange) Path() []byte {
	uri := x.ctx.Request.Header.RequestURI()
	if i := bytes.IndexByte(uri, '?'); i >= 0 {
		return uri[:i]
	}
	if len(uri) > 0 && uri[0] != '/' {
		// Absolute-form target: use the parsed path.
		return x.ctx.URI().PathOriginal()
	}
	return uri
}
func (x *fastExchange) Query() []byte {
	uri := x.ctx.Request.Header.RequestURI()
	if i := bytes.IndexByte(uri, '?'); i >= 0 {
		return uri[i+1:]
	}
	return nil
}
func (x *fastExchange) RequestURI() []byte { return x.ctx.Request.Header.RequestURI() }
func (x *fastExchange) SetRequestURI(uri string) {
	x.ctx.Request.Header.SetRequestURI(uri)
	x.ctx.Request.SetRequestURI(uri)
}
func (x *fastExchange) Host() []byte { return x.ctx.Request.Header.Host() }
func (x *fastExchange) Proto() string {
	h := &x.ctx.Request.Header
	if h.IsHTTP11() {
		return "HTTP/1.1"
	}
	if p := h.Protocol(); string(p) != "HTTP/1.0" && len(p) > 0 {
		// fasthttp serves any "HTTP/x.y" as HTTP/1.0: tell the version
		// as sent, which the front door refuses (505).
		return string(p)
	}
	return "HTTP/1.0"
}
func (x *fastExchange) IsTLS() bool { return x.tls }

// ClientGone looks at the client's socket: fasthttp reads nothing while
// the handler runs, so a close shows there and nowhere else.
func (x *fastExchange) ClientGone() bool { return connClosed(x.ctx.Conn()) }

// ClientWatch looks at the same socket, which fasthttp keeps open until
// the response body has been sent.
func (x *fastExchange) ClientWatch() func() bool {
	c := x.ctx.Conn()
	return func() bool { return connClosed(c) }
}

// AfterClientGone never calls f: fasthttp's RequestCtx is done only when
// the server shuts down, and a close shows only to ClientGone's look.
func (x *fastExchange) AfterClientGone(func()) func() bool { return stopNothing }

func stopNothing() bool { return true }

// ClientGoneSignalled is false: see AfterClientGone.
func (x *fastExchange) ClientGoneSignalled() bool { return false }

func connClosed(c net.Conn) bool {
	s, _ := sockpeek.Look(c)
	return s == sockpeek.Closed
}

func (x *fastExchange) RemoteAddr() net.Addr {
	if x.client != nil {
		return x.client
	}
	return x.ctx.RemoteAddr()
}

// Peer is the TCP peer, whatever the front door decided the client is.
func (x *fastExchange) Peer() net.Addr { return x.ctx.RemoteAddr() }

// TLSConnectionState is the connection's TLS state, or nil.
func (x *fastExchange) TLSConnectionState() *tls.ConnectionState {
	return x.ctx.TLSConnectionState()
}
func (x *fastExchange) LocalAddr() net.Addr { return x.ctx.LocalAddr() }

func (x *fastExchange) RequestBody() io.Reader {
	if s := x.ctx.RequestBodyStream(); s != nil {
		return s
	}
	return bytes.NewReader(x.ctx.Request.Body())
}

// VisitRequestTrailers: fasthttp reads a chunked body's trailer fields
// into the request header, keyed by the trailer names.
func (x *fastExchange) VisitRequestTrailers(fn func(name, value []byte)) {
	h := &x.ctx.Request.Header
	for _, k := range h.PeekTrailerKeys() {
		if v := h.PeekBytes(k); v != nil {
			fn(k, v)
		}
	}
}

func (x *fastExchange) ContentLength() int64 {
	n := x.ctx.Request.Header.ContentLength()
	switch {
	case n == -2:
		// Neither Content-Length nor chunked: a request without a body
		// (RFC 9112, section 6.3), not one of unknown length.
		return 0
	case n < 0:
		return -1
	}
	return int64(n)
}
func (x *fastExchange) SetRequestBody(b []byte) { x.ctx.Request.SetBody(b) }

func (x *fastExchange) Status() int        { return x.ctx.Response.StatusCode() }
func (x *fastExchange) SetStatus(code int) { x.ctx.Response.SetStatusCode(code) }
func (x *fastExchange) ResponseHeader(name string) []byte {
	return x.ctx.Response.Header.Peek(name)
}
func (x *fastExchange) VisitResponseHeaders(fn func(name, value []byte)) {
	for k, v := range x.ctx.Response.Header.All() {
		fn(k, v)
	}
}
func (x *fastExchange) SetResponseHeader(name, value string) {
	x.ctx.Response.Header.Set(name, value)
}
func (x *fastExchange) SetResponseHeaderBytes(name string, value []byte) {
	x.ctx.Response.Header.SetBytesV(name, value)
}
func (x *fastExchange) AddResponseHeader(name, value string) {
	x.ctx.Response.Header.Add(name, value)
}
func (x *fastExchange) AddResponseHeaderBytes(name, value []byte) {
	x.ctx.Response.Header.AddBytesKV(name, value)
}
func (x *fastExchange) DelResponseHeader(name string) { x.ctx.Response.Header.Del(name) }

func (x *fastExchange) SetBody(b []byte) {
	x.stream = false
	x.ctx.Response.SetBodyRaw(b)
}
func (x *fastExchange) Write(p []byte) (int, error) {
	x.stream = false
	return x.ctx.Response.BodyWriter().Write(p)
}
func (x *fastExchange) SendFile(f *os.File, off, n int64) {
	x.sendFile(f, off, n, f)
}

// SendsFiles reports whether the connection is plain TCP under lazyconn,
// which sends a fileBody with sendfile(2) (not TLS).
func (x *fastExchange) SendsFiles() bool { return !x.tls && moreConn(x.ctx.Conn()) != nil }

// SendFileAt sends the file region through the same path as SendFile,
// from its own offsets, and calls done.Close instead of closing f.
func (x *fastExchange) SendFileAt(f *os.File, off, n int64, done io.Closer) {
	x.sendFile(f, off, n, done)
}

// sendFile makes a fileBody the body stream. fasthttp hands it to the
// connection's ReadFrom (lazyconn sends it with sendfile(2) at the
// body's offset) or, on TLS, reads it with pread.
func (x *fastExchange) sendFile(f *os.File, off, n int64, done io.Closer) {
	x.ResetBody()
	if x.ctx.IsHead() {
		_ = done.Close()
		x.ctx.Response.SkipBody = true
		x.ctx.Response.Header.SetContentLength(int(n))
		x.stream = true
		return
	}
	b := fileBodyPool.Get().(*fileBody)
	b.f, b.off, b.n, b.done = f, off, n, done
	x.stream = true
	x.ctx.Response.SetBodyStream(b, int(n))
}

// fileBody is the body of SendFile on the fast engine: a file region
// (lazyconn.FileRegion) read with ReadAt and sent with sendfile(2) at its
// own offsets, never the file's, so a descriptor shared between requests
// is safe. fasthttp closes it once written, or when the body is replaced.
type fileBody struct {
	f      *os.File
	off, n int64
	done   io.Closer
}

var fileBodyPool = sync.Pool{New: func() any { return new(fileBody) }}

func (b *fileBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	m, err := b.f.ReadAt(p, b.off)
	b.Advance(int64(m))
	if err == io.EOF {
		if m > 0 {
			err = nil
		} else {
			err = io.ErrUnexpectedEOF // shorter than said
		}
	}
	return m, err
}

func (b *fileBody) Region() (*os.File, int64, int64) { return b.f, b.off, b.n }
func (b *fileBody) Advance(n int64)                  { b.off += n; b.n -= n }

func (b *fileBody) Close() error {
	if b.done == nil {
		return nil
	}
	err := b.done.Close()
	*b = fileBody{}
	fileBodyPool.Put(b)
	return err
}

// moreConn finds the lazyconn.Conn under a plain HTTP/1.1 connection,
// through the listener's wrappers (sniffing, limiting), but not under
// TLS, whose records it does not see.
func moreConn(c net.Conn) *lazyconn.Conn {
	for range 4 {
		switch t := c.(type) {
		case *lazyconn.Conn:
			return t
		case *tls.Conn:
			return nil
		case interface{ NetConn() net.Conn }:
			c = t.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// FastWriteBufferSize is the fasthttp.Server WriteBufferSize that Fast's
// handler assumes (fasthttp's default): a response whose body is larger
// goes out in more than one write, so its first write may be corked. A
// server serving Fast's handler must not use a larger one.
const FastWriteBufferSize = 4096

// CorkFast lets the response of ctx, when it is larger than fasthttp's
// write buffer, leave in full segments, as nginx's tcp_nopush does: its
// first write is not its last, so the first goes under TCP_CORK and the
// cork is cleared after the next one (the rest of a body in memory) or
// the sendfile of a file. Call it once the response is final, on a plain
// connection (it does nothing under TLS). The listener does for
// tcp_nopush; on loopback the cork costs more CPU than it saves.
func CorkFast(ctx *fasthttp.RequestCtx) {
	r := &ctx.Response
	if r.SkipBody || ctx.IsHead() {
		return
	}
	var n int
	file := false
	if s, ok := r.BodyStream().(*fileBody); ok {
		n, file = int(s.n), true
	} else if r.IsBodyStream() {
		return
	} else {
		n = len(r.Body())
	}
	if n <= FastWriteBufferSize {
		return
	}
	if c := moreConn(ctx.Conn()); c != nil {
		c.CorkNext()
		// A file's head goes alone, so that sendfile starts at the
		// region's first page, as nginx's does: the kernel then packs
		// whole pages into full segments, not a head and a page's tail.
		r.ImmediateHeaderFlush = file
	}
}

func (x *fastExchange) Stream(size int64, fn func(w StreamWriter) error) {
	x.ResetBody()
	x.stream = true
	if x.ctx.IsHead() {
		x.ctx.Response.SkipBody = true
		if size >= 0 {
			x.ctx.Response.Header.SetContentLength(int(size))
		}
		return
	}
	x.ctx.Response.SetBodyStreamWriter(func(w *bufio.Writer) {
		_ = fn(fastStreamWriter{w})
	})
	if size >= 0 {
		x.ctx.Response.Header.SetContentLength(int(size))
	}
}
func (x *fastExchange) SendReader(r io.Reader, size int64) {
	x.ResetBody()
	x.stream = true
	if x.ctx.IsHead() {
		closeReader(r)
		x.ctx.Response.SkipBody = true
		if size >= 0 {
			x.ctx.Response.Header.SetContentLength(int(size))
		}
		return
	}
	if tr, ok := r.(TrailerReader); ok && size < 0 {
		// Trailers go out after the last chunk; fasthttp writes those set
		// on the header by then.
		t := fastTrailerPool.Get().(*fastTrailerReader)
		t.r, t.h = tr, &x.ctx.Response.Header
		r = t
	}
	// fasthttp copies the stream itself and flushes each chunk of a chunked
	// body, so nothing here needs a goroutine.
	x.ctx.Response.SetBodyStream(r, int(size))
}
func (x *fastExchange) ResponseBody() []byte {
	if x.stream {
		return nil
	}
	return x.ctx.Response.Body()
}

func (x *fastExchange) ResetBody() {
	x.stream = false
	x.ctx.Response.ResetBody() // closes a pending body stream
	x.ctx.Response.SkipBody = false
}

func (x *fastExchange) Upgrade(fn func(conn net.Conn, buffered io.Reader)) error {
	x.ResetBody()
	x.stream = true
	x.ctx.Response.Header.SetContentLength(-2) // no body, no chunking: identity
	x.ctx.Response.SkipBody = true
	x.ctx.Hijack(func(c net.Conn) { fn(c, c) })
	return nil
}

type fastStreamWriter struct{ w *bufio.Writer }

func (s fastStreamWriter) Write(p []byte) (int, error) { return s.w.Write(p) }
func (s fastStreamWriter) Flush() error                { return s.w.Flush() }

// fastTrailerReader copies a TrailerReader's trailers onto the response
// header when the body ends, before fasthttp writes the trailer section.
type fastTrailerReader struct {
	r   TrailerReader
	h   *fasthttp.ResponseHeader
	add func(name, value []byte)
}

var fastTrailerPool = sync.Pool{New: func() any {
	t := new(fastTrailerReader)
	t.add = t.addTrailer
	return t
}}

func (t *fastTrailerReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err == io.EOF && t.h != nil {
		t.r.VisitTrailers(t.add)
		t.h = nil
	}
	return n, err
}

func (t *fastTrailerReader) addTrailer(name, value []byte) {
	// Announcing the name routes its value to the trailer section; names
	// that may not be trailers (RFC 9110, section 6.5.1) are dropped.
	if t.h.AddTrailerBytes(name) == nil {
		t.h.AddBytesKV(name, value)
	}
}

func (t *fastTrailerReader) Close() error {
	err := closeReader(t.r)
	t.r, t.h = nil, nil
	fastTrailerPool.Put(t)
	return err
}

// closeReader closes r when it is an io.Closer.
func closeReader(r io.Reader) error {
	if c, ok := r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
