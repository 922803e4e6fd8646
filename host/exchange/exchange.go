package exchange

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/sluicehq/sluice/runtime/api"
)

// Exchange is one request and the response being built for it. Its
// request accessors, header edits and buffered body are api.HTTP, declared
// once in runtime/api so that the filter runtime takes an Exchange as is;
// the methods below are what only the host uses. Notes on the embedded
// methods as the adapters implement them: until the front door has made
// it origin-form, RequestURI is the target as sent, absolute-form
// ("http://a.test/p") or authority-form ("a.test:443"); net/http keeps
// the order of request header fields only among the fields of one name.
type Exchange interface {
	api.HTTP

	// SetContext replaces the context (to add a span, say).
	SetContext(ctx context.Context)

	// Path is the request path as sent, not percent-decoded, without the
	// query.
	Path() []byte
	// Query is the raw query string without the '?'; empty when none.
	Query() []byte
	// Host is the Host header (HTTP/1.1) or :authority (HTTP/2 and
	// HTTP/3), with the port when the client sent one.
	Host() []byte
	// LocalAddr is the address the request was accepted on.
	LocalAddr() net.Addr
	// ContentLength is the request body's declared size, or -1 when
	// unknown (chunked).
	ContentLength() int64

	// SetResponseHeaderBytes is SetResponseHeader for a cached value; the
	// adapter copies value or keeps it unmodified.
	SetResponseHeaderBytes(name string, value []byte)
	// AddResponseHeaderBytes is AddResponseHeader for byte slices (a
	// header relayed from an upstream, say); the adapter copies both.
	AddResponseHeaderBytes(name, value []byte)

	// SendFile sends n bytes of f starting at off as the body and closes f
	// once written (or at once for HEAD). Large files go out with sendfile.
	SendFile(f *os.File, off, n int64)
	// Stream makes fn produce the body after the headers are written;
	// size is the body length, or -1 for unknown (chunked on HTTP/1.1).
	// Flush on the writer pushes what was written to the client at once.
	Stream(size int64, fn func(w StreamWriter) error)
	// SendReader makes the body the bytes read from r after the headers
	// are written: size bytes, or up to io.EOF when size is -1 (chunked on
	// HTTP/1.1, and each read pushed to the client at once, so that event
	// streams are not held back). r is closed, when it is an io.Closer,
	// once the body is written or dropped. When r is a TrailerReader, its
	// trailers follow the body where the protocol carries them (HTTP/2, or
	// a chunked HTTP/1.1 body). A read error other than io.EOF cuts the
	// response short so that the client sees it incomplete: the connection
	// is closed, or the HTTP/2 stream reset. No goroutine is started for it.
	SendReader(r io.Reader, size int64)
	// BufferBodyLimit reads a body set with SendFile, Stream or SendReader
	// into memory, so that ResponseBody returns it (for filters that
	// rewrite responses), holding at most limit+1 bytes (no limit when
	// negative): a larger body is dropped (a file or stream closed) and
	// fits is false; one of known size over the limit is dropped unread.
	// A non-zero deadline stops reading a stream with
	// os.ErrDeadlineExceeded once it has passed. It does nothing for a
	// buffered body or a HEAD request.
	BufferBodyLimit(limit int64, deadline time.Time) (fits bool, err error)
	// Upgrade answers with the status and headers set so far (101, say)
	// and then hands the raw connection to fn, which owns it until it
	// returns. It returns ErrUpgradeUnsupported on HTTP/2, but for an
	// extended CONNECT (ConnectProtocol) on the sluice engine, whose
	// stream it hands over as the conn.
	Upgrade(fn func(conn net.Conn, buffered io.Reader)) error
}

// StreamWriter is what Stream gives its producer.
type StreamWriter interface {
	io.Writer
	// Flush sends everything written so far to the client.
	Flush() error
}

// ClientGone reports whether the client has gone away while its request
// is being served: it closed or reset its connection (HTTP/1.1), or its
// stream or connection ended (HTTP/2 and HTTP/3). It never blocks and
// consumes nothing the client sent. Over HTTP/1.1 with TLS, a client's
// close_notify looks like more to read, so only a reset or a close
// without it is seen.
func ClientGone(x Exchange) bool {
	if g, ok := x.(interface{ ClientGone() bool }); ok {
		return g.ClientGone()
	}
	return x.Context().Err() != nil
}

// AfterClientGone arranges for f to run, on a goroutine of its own, as
// soon as the engine learns that the client has gone away (ClientGone
// turns true): an HTTP/2 or HTTP/3 stream reset, its connection closed.
// A wait on an upstream uses it to stop at once rather than at its next
// look. stop undoes it and reports whether f had not started, as
// context.AfterFunc's does. fasthttp learns of a close only by looking
// (ClientGone): there f never runs and stop reports true.
func AfterClientGone(x Exchange, f func()) (stop func() bool) {
	if a, ok := x.(interface {
		AfterClientGone(f func()) func() bool
	}); ok {
		return a.AfterClientGone(f)
	}
	return context.AfterFunc(x.Context(), f)
}

// ClientGoneSignalled reports whether AfterClientGone's f can ever run
// for x: false on fasthttp, so that a caller can skip arranging it there.
func ClientGoneSignalled(x Exchange) bool {
	s, ok := x.(interface{ ClientGoneSignalled() bool })
	return !ok || s.ClientGoneSignalled()
}

// VisitRequestTrailers calls fn for each trailer field of a chunked (or
// HTTP/2) request body. They are known once the body has been read to
// io.EOF; before that, and for bodies without trailers, fn is not called.
func VisitRequestTrailers(x Exchange, fn func(name, value []byte)) {
	if t, ok := x.(interface {
		VisitRequestTrailers(fn func(name, value []byte))
	}); ok {
		t.VisitRequestTrailers(fn)
	}
}

// ClientWatch returns ClientGone as a function that stays valid after the
// handler returns, while a body given to SendReader is still being sent
// (the exchange itself may be recycled by then).
func ClientWatch(x Exchange) func() bool {
	if w, ok := x.(interface{ ClientWatch() func() bool }); ok {
		return w.ClientWatch()
	}
	ctx := x.Context()
	return func() bool { return ctx.Err() != nil }
}

// TrailerReader is a body whose trailer fields are known once it has been
// read to io.EOF: an upstream response relayed with SendReader, say.
type TrailerReader interface {
	io.Reader
	// VisitTrailers calls fn for each trailer field, once per value. It
	// is called after Read returned io.EOF, and fn must not keep the
	// slices.
	VisitTrailers(fn func(name, value []byte))
}

// Handler handles an exchange. It returns an error instead of rendering
// one; a single place (the host's error renderer) turns errors into
// responses, so that a handler never writes half an error page.
type Handler interface {
	ServeExchange(x Exchange) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(x Exchange) error

// ServeExchange calls f(x).
func (f HandlerFunc) ServeExchange(x Exchange) error { return f(x) }

// ErrUpgradeUnsupported is returned by Upgrade where the protocol cannot
// hand over its connection (HTTP/2).
var ErrUpgradeUnsupported = errors.New("exchange: connection upgrade not supported on this protocol")

// Error is an error that carries the HTTP status to answer with and a
// short, safe message for the client. Err, when set, is the cause for the
// log; it never reaches the client.
type Error struct {
	Status  int
	Message string
	Err     error
}

// Errorf returns an *Error with the given status and a client-safe message.
func Errorf(status int, format string, args ...any) *Error {
	return &Error{Status: status, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%d %s: %v", e.Status, e.Message, e.Err)
	}
	return fmt.Sprintf("%d %s", e.Status, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// StatusOf returns the status an error should be answered with: the
// Status of an *Error in its chain, else 500.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) && e.Status != 0 {
		return e.Status
	}
	return 500
}

// FileAtSender is an Exchange that sends a region of a file shared
// between requests (an open-file cache) with sendfile(2), reading and
// sending at its own offsets and never moving the file's. Engines
// without sendfile (TLS, HTTP/2, HTTP/3) need not implement it; callers
// check with a type assertion and SendsFiles, and otherwise send the
// bytes another way.
type FileAtSender interface {
	// SendsFiles reports whether SendFileAt would use sendfile(2) for
	// this exchange.
	SendsFiles() bool
	// SendFileAt sends n bytes of f starting at off as the body, like
	// SendFile, and calls done.Close instead of closing f once written
	// (or at once for HEAD, or when the body is replaced).
	SendFileAt(f *os.File, off, n int64, done io.Closer)
}
