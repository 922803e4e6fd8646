package exchange

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// stdExchange adapts net/http (used for HTTP/2, and for HTTP/1.1 where the
// fast engine is off). The response is recorded and committed after the
// handler returns, like fasthttp does.
type stdExchange struct {
	w      http.ResponseWriter
	r      *http.Request
	status int
	body   bytes.Buffer

	src BodySource // SendFile's, Stream's or SendReader's body, not read yet

	upgraded bool
	conn     // the client address the front door decided (conn.go)
	rawPaths
}

var stdPool = sync.Pool{New: func() any { return new(stdExchange) }}

// Std returns a net/http handler that serves every request with h and
// renders a returned error with onError.
func Std(h Handler, onError func(Exchange, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 3 && r.ContentLength < 0 {
			settleH3Body(r)
		}
		x := stdPool.Get().(*stdExchange)
		x.w, x.r, x.status = w, r, 200
		if err := h.ServeExchange(x); err != nil {
			onError(x, err)
		}
		x.commit()
		x.reset()
		stdPool.Put(x)
	})
}

// h3BodyWait is how long an HTTP/3 request without Content-Length waits
// to learn whether a body follows its header.
const h3BodyWait = 5 * time.Millisecond

// settleH3Body gives an HTTP/3 request without Content-Length the length
// 0 when it has no body. HTTP/3 has no END_STREAM flag on the header
// (HTTP/2's signal for "no body"), so quic-go reports every such request,
// a plain GET included, as of unknown length; sluice would then treat a
// GET like a chunked upload (forwarded with a chunked empty body, never
// retried). A client that sends no body ends the stream with or right
// after its header, so a first read of the body meets io.EOF at once.
// That read runs in a goroutine, awaited h3BodyWait at most: a body that
// is still to come keeps the length -1, and the byte or error read is
// handed on to the body's reader.
func settleH3Body(r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		r.ContentLength = 0
		return
	}
	p := &h3Peek{body: r.Body, done: make(chan struct{})}
	go p.peek()
	t := time.NewTimer(h3BodyWait)
	select {
	case <-p.done:
		t.Stop()
		if p.n == 0 && p.err == io.EOF {
			r.ContentLength, r.Body = 0, http.NoBody
			return
		}
	case <-t.C:
	}
	r.Body = p
}

// h3Peek is an HTTP/3 request body whose first byte (or error) was read
// ahead by settleH3Body. Reads wait for that read, then continue the body.
type h3Peek struct {
	body io.ReadCloser
	done chan struct{}
	b    [1]byte
	n    int   // 1 while b is still to be handed on
	err  error // the first read's error, while still to be handed on
}

func (p *h3Peek) peek() {
	p.n, p.err = p.body.Read(p.b[:])
	close(p.done)
}

func (p *h3Peek) Read(b []byte) (int, error) {
	<-p.done
	if p.n > 0 {
		if len(b) == 0 {
			return 0, nil
		}
		b[0], p.n = p.b[0], 0
		return 1, nil
	}
	if err := p.err; err != nil {
		p.err = nil
		return 0, err
	}
	return p.body.Read(b)
}

// Close closes the body, which also ends a first read still waiting.
func (p *h3Peek) Close() error { return p.body.Close() }

func (x *stdExchange) reset() {
	x.src.Release()
	body := x.body
	body.Reset()
	*x = stdExchange{body: body}
}

func bodyAllowed(status int) bool {
	return !(status >= 100 && status < 200) && status != 204 && status != 304
}

func (x *stdExchange) commit() {
	if x.upgraded {
		return
	}
	h := x.w.Header()
	head := x.r.Method == http.MethodHead
	allowed := bodyAllowed(x.status)
	switch {
	case x.src.File != nil:
		f := x.src.File
		x.src.File = nil
		defer f.Close()
		if allowed {
			h.Set("Content-Length", strconv.FormatInt(x.src.N, 10))
		}
		x.w.WriteHeader(x.status)
		if head || !allowed {
			return
		}
		if _, err := f.Seek(x.src.Off, io.SeekStart); err != nil {
			return
		}
		// CopyN wraps f in an io.LimitedReader, which net/http's
		// ReadFrom hands to sendfile.
		_, _ = io.CopyN(x.w, f, x.src.N)
	case x.src.Reader != nil:
		r := x.src.Reader
		x.src.Reader = nil
		defer closeReader(r)
		if x.src.Size >= 0 && allowed {
			h.Set("Content-Length", strconv.FormatInt(x.src.Size, 10))
		}
		x.w.WriteHeader(x.status)
		if head || !allowed {
			return
		}
		x.copyReader(r, x.src.Size)
	case x.src.Stream != nil:
		if x.src.Size >= 0 && allowed {
			h.Set("Content-Length", strconv.FormatInt(x.src.Size, 10))
		}
		x.w.WriteHeader(x.status)
		if head || !allowed {
			return
		}
		fl, _ := x.w.(http.Flusher)
		_ = x.src.Stream(stdStreamWriter{x.w, fl})
	default:
		if allowed {
			h.Set("Content-Length", strconv.Itoa(x.body.Len()))
		} else {
			h.Del("Content-Length")
		}
		x.w.WriteHeader(x.status)
		if !head && allowed {
			_, _ = x.w.Write(x.body.Bytes())
		}
	}
}

var copyBufPool = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// copyReader writes r to the client: size bytes, or up to io.EOF when size
// is negative, flushing each read of an unsized body. A TrailerReader's
// trailers are set once it is done; net/http sends them after the body. A
// read error aborts the response (r is still closed: commit defers it).
func (x *stdExchange) copyReader(r io.Reader, size int64) {
	buf := copyBufPool.Get().(*[32 << 10]byte)
	defer copyBufPool.Put(buf)
	fl, _ := x.w.(http.Flusher)
	left := size
	for size < 0 || left > 0 {
		p := buf[:]
		if size >= 0 && int64(len(p)) > left {
			p = p[:left]
		}
		n, err := r.Read(p)
		if n > 0 {
			if _, werr := x.w.Write(p[:n]); werr != nil {
				return
			}
			left -= int64(n)
			if size < 0 && fl != nil {
				fl.Flush()
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			// Cut the response short where the client can tell: no
			// terminating chunk on HTTP/1.1, a stream reset on HTTP/2.
			panic(http.ErrAbortHandler)
		}
	}
	if tr, ok := r.(TrailerReader); ok {
		if size >= 0 {
			// Trailers are known at io.EOF, past the last byte.
			var one [1]byte
			if n, err := r.Read(one[:]); n > 0 || err != io.EOF {
				return
			}
		}
		h := x.w.Header()
		tr.VisitTrailers(func(name, value []byte) {
			h.Add(http.TrailerPrefix+string(name), string(value))
		})
	}
}

// b returns the bytes of s without copying; callers must not modify them.
func b(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

func (x *stdExchange) Context() context.Context       { return x.r.Context() }
func (x *stdExchange) SetContext(ctx context.Context) { x.r = x.r.WithContext(ctx) }
func (x *stdExchange) Method() []byte                 { return b(x.r.Method) }
func (x *stdExchange) SetMethod(m string)             { x.r.Method = m }

// ClientGone: net/http cancels the request's context when the client
// goes (a closed connection, an HTTP/2 stream reset).
func (x *stdExchange) ClientGone() bool { return x.r.Context().Err() != nil }

// requestURI is the target as sent: an absolute-form one too, which the
// front door turns into origin-form once it has taken its authority.
func (x *stdExchange) requestURI() string {
	if x.r.RequestURI != "" {
		return x.r.RequestURI
	}
	return x.r.URL.RequestURI()
}
func (x *stdExchange) Path() []byte {
	u := x.requestURI()
	if i := strings.IndexByte(u, '?'); i >= 0 {
		u = u[:i]
	}
	return b(u)
}
func (x *stdExchange) Query() []byte {
	u := x.requestURI()
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return b(u[i+1:])
	}
	return nil
}
func (x *stdExchange) RequestURI() []byte { return b(x.requestURI()) }
func (x *stdExchange) SetRequestURI(uri string) {
	x.r.RequestURI = uri
	if u, err := url.ParseRequestURI(uri); err == nil {
		x.r.URL.Path, x.r.URL.RawPath, x.r.URL.RawQuery = u.Path, u.RawPath, u.RawQuery
	}
}
func (x *stdExchange) Host() []byte  { return b(x.r.Host) }
func (x *stdExchange) Proto() string { return x.r.Proto }
func (x *stdExchange) IsTLS() bool   { return x.r.TLS != nil }

// TLSConnectionState is the connection's TLS state, or nil.
func (x *stdExchange) TLSConnectionState() *tls.ConnectionState { return x.r.TLS }
func (x *stdExchange) RemoteAddr() net.Addr {
	if x.client != nil {
		return x.client
	}
	return x.Peer()
}

// Peer is the TCP (or QUIC) peer, whatever the front door decided the
// client is.
func (x *stdExchange) Peer() net.Addr {
	if ap, err := netip.ParseAddrPort(x.r.RemoteAddr); err == nil {
		return net.TCPAddrFromAddrPort(ap)
	}
	return &net.TCPAddr{}
}
func (x *stdExchange) LocalAddr() net.Addr {
	if a, ok := x.r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		return a
	}
	return &net.TCPAddr{}
}

func (x *stdExchange) RequestHeader(name string) []byte {
	if strings.EqualFold(name, "host") {
		return fieldValue(x.r.Host)
	}
	vs := x.r.Header.Values(name)
	if len(vs) == 0 {
		if len(x.r.Trailer) > 0 && strings.EqualFold(name, "trailer") {
			return x.trailerNames()
		}
		return nil
	}
	return fieldValue(vs[0])
}

// fieldValue is b for a header value: an empty one is present, not nil.
func fieldValue(s string) []byte {
	if s == "" {
		return emptyValue
	}
	return b(s)
}

// trailerNames rebuilds the Trailer header, which net/http moves into
// Request.Trailer's keys.
func (x *stdExchange) trailerNames() []byte {
	var names []byte
	for k := range x.r.Trailer {
		if len(names) > 0 {
			names = append(names, ", "...)
		}
		names = append(names, k...)
	}
	return names
}
func (x *stdExchange) VisitRequestHeaders(fn func(name, value []byte)) {
	fn([]byte("Host"), fieldValue(x.r.Host))
	for k, vs := range x.r.Header {
		for _, v := range vs {
			fn(b(k), fieldValue(v))
		}
	}
}
func (x *stdExchange) SetRequestHeader(name, value string) {
	if strings.EqualFold(name, "host") {
		x.r.Host = value
		return
	}
	x.r.Header.Set(name, value)
}
func (x *stdExchange) AddRequestHeader(name, value string) { x.r.Header.Add(name, value) }
func (x *stdExchange) DelRequestHeader(name string)        { x.r.Header.Del(name) }
func (x *stdExchange) RequestBody() io.Reader {
	if x.r.Body == nil {
		return http.NoBody
	}
	return x.r.Body
}
func (x *stdExchange) ContentLength() int64 { return x.r.ContentLength }

// VisitRequestTrailers reads net/http's Request.Trailer, filled once the
// body has been read to io.EOF.
func (x *stdExchange) VisitRequestTrailers(fn func(name, value []byte)) {
	for k, vs := range x.r.Trailer {
		for _, v := range vs {
			fn([]byte(k), []byte(v))
		}
	}
}
func (x *stdExchange) SetRequestBody(p []byte) {
	x.r.Body = io.NopCloser(bytes.NewReader(p))
	x.r.ContentLength = int64(len(p))
	x.r.Header.Set("Content-Length", strconv.Itoa(len(p)))
	x.r.Header.Del("Transfer-Encoding")
}

func (x *stdExchange) Status() int        { return x.status }
func (x *stdExchange) SetStatus(code int) { x.status = code }
func (x *stdExchange) ResponseHeader(name string) []byte {
	vs := x.w.Header().Values(name)
	if len(vs) == 0 {
		return nil
	}
	return b(vs[0])
}
func (x *stdExchange) VisitResponseHeaders(fn func(name, value []byte)) {
	for k, vs := range x.w.Header() {
		for _, v := range vs {
			fn(b(k), b(v))
		}
	}
}
func (x *stdExchange) SetResponseHeader(name, value string) { x.w.Header().Set(name, value) }
func (x *stdExchange) SetResponseHeaderBytes(name string, value []byte) {
	x.w.Header().Set(name, string(value))
}
func (x *stdExchange) AddResponseHeader(name, value string) {
	if singleValued(name) {
		x.w.Header().Set(name, value)
		return
	}
	x.w.Header().Add(name, value)
}
func (x *stdExchange) AddResponseHeaderBytes(name, value []byte) {
	x.AddResponseHeader(string(name), string(value))
}

// singleValued reports the response fields a response carries once and
// fasthttp keeps as one value: adding one replaces it on every engine.
func singleValued(name string) bool {
	return len(name) == 12 && strings.EqualFold(name, "Content-Type") ||
		len(name) == 6 && strings.EqualFold(name, "Server")
}
func (x *stdExchange) DelResponseHeader(name string) { x.w.Header().Del(name) }

func (x *stdExchange) SetBody(p []byte) {
	x.ResetBody()
	x.body.Write(p)
}
func (x *stdExchange) Write(p []byte) (int, error) {
	if x.src.Pending() {
		x.ResetBody()
	}
	return x.body.Write(p)
}
func (x *stdExchange) SendFile(f *os.File, off, n int64) {
	x.ResetBody()
	x.src.File, x.src.Off, x.src.N = f, off, n
}
func (x *stdExchange) Stream(size int64, fn func(w StreamWriter) error) {
	x.ResetBody()
	x.src.Stream, x.src.Size = fn, size
}
func (x *stdExchange) SendReader(r io.Reader, size int64) {
	x.ResetBody()
	x.src.Reader, x.src.Size = r, size
}
func (x *stdExchange) ResponseBody() []byte {
	if x.src.Pending() {
		return nil
	}
	return x.body.Bytes()
}

func (x *stdExchange) ResetBody() {
	x.src.Release()
	x.body.Reset()
}

func (x *stdExchange) Upgrade(fn func(conn net.Conn, buffered io.Reader)) error {
	if x.r.ProtoMajor != 1 {
		return ErrUpgradeUnsupported
	}
	hj, ok := x.w.(http.Hijacker)
	if !ok {
		return ErrUpgradeUnsupported
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return err
	}
	x.upgraded = true
	x.ResetBody()
	status, header := x.status, x.w.Header().Clone()
	go func() {
		defer conn.Close()
		bw := bufio.NewWriter(conn)
		bw.WriteString("HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n")
		_ = header.Write(bw)
		bw.WriteString("\r\n")
		if bw.Flush() != nil {
			return
		}
		fn(conn, rw.Reader)
	}()
	return nil
}

type stdStreamWriter struct {
	w  io.Writer
	fl http.Flusher
}

func (s stdStreamWriter) Write(p []byte) (int, error) { return s.w.Write(p) }
func (s stdStreamWriter) Flush() error {
	if s.fl != nil {
		s.fl.Flush()
	}
	return nil
}
