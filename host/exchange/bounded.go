package exchange

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"time"
)

// Bounded reads for the filter host. A Wasm filter reads the request body
// and the response body through host calls that must neither hold more
// than the filter's max_buffer in memory nor wait on a slow peer past the
// filter's deadline. The read deadline is not part of Exchange, so callers
// reach it through SetReadDeadline (or, in the runtime, through an
// interface of the same method set); Exchange.BufferBodyLimit bounds
// what a buffered response body holds.

// SetReadDeadline sets the deadline for reads of x's request body from
// the client (the connection's read deadline on HTTP/1.1, the stream's on
// HTTP/2). A zero t removes it. It returns http.ErrNotSupported when the
// engine offers no deadline; a caller then has to bound its reads some
// other way.
func SetReadDeadline(x Exchange, t time.Time) error {
	if d, ok := x.(interface{ SetReadDeadline(time.Time) error }); ok {
		return d.SetReadDeadline(t)
	}
	return http.ErrNotSupported
}

func (x *fastExchange) SetReadDeadline(t time.Time) error {
	return x.ctx.Conn().SetReadDeadline(t)
}

func (x *fastExchange) BufferBodyLimit(limit int64, deadline time.Time) (bool, error) {
	if !x.stream || x.ctx.IsHead() {
		return true, nil
	}
	r := x.ctx.Response.BodyStream()
	if r == nil {
		return true, nil
	}
	if n := x.ctx.Response.Header.ContentLength(); n >= 0 {
		if limit >= 0 && int64(n) > limit {
			x.ResetBody() // closes the stream
			return false, nil
		}
		r = io.LimitReader(r, int64(n))
	}
	b, fits, err := readBounded(r, limit, deadline)
	x.ResetBody() // closes the stream
	if err != nil || !fits {
		return fits, err
	}
	x.ctx.Response.SetBody(b)
	return true, nil
}

func (x *stdExchange) SetReadDeadline(t time.Time) error {
	return http.NewResponseController(x.w).SetReadDeadline(t)
}

func (x *stdExchange) BufferBodyLimit(limit int64, deadline time.Time) (bool, error) {
	if x.r.Method == http.MethodHead {
		return true, nil
	}
	b, fits, ok, err := x.src.Buffer(limit, deadline)
	if !ok {
		return true, nil
	}
	x.ResetBody()
	if err != nil || !fits {
		return fits, err
	}
	x.body.Write(b)
	return true, nil
}

// readBounded reads r to io.EOF, but never more than limit+1 bytes (when
// limit is not negative): fits is false when there were more than limit.
// A non-zero deadline is checked before each read.
func readBounded(r io.Reader, limit int64, deadline time.Time) (b []byte, fits bool, err error) {
	if limit >= 0 {
		r = io.LimitReader(r, limit+1)
	}
	if !deadline.IsZero() {
		r = &deadlineReader{r: r, deadline: deadline}
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, false, err
	}
	if limit >= 0 && int64(buf.Len()) > limit {
		return nil, false, nil
	}
	return buf.Bytes(), true, nil
}

// deadlineReader fails reads once its deadline has passed. It bounds a
// peer that trickles; one that stalls is bounded by the reader's own
// timeouts (the proxy's, say).
type deadlineReader struct {
	r        io.Reader
	deadline time.Time
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	if !time.Now().Before(d.deadline) {
		return 0, os.ErrDeadlineExceeded
	}
	return d.r.Read(p)
}

var errOverLimit = errors.New("body over the buffer limit")

// limitWriter is the StreamWriter a Stream body is buffered through.
type limitWriter struct {
	buf      bytes.Buffer
	limit    int64
	deadline time.Time
	err      error // the first write refused, sticky
}

func (w *limitWriter) Write(p []byte) (int, error) {
	switch {
	case w.err != nil:
	case !w.deadline.IsZero() && !time.Now().Before(w.deadline):
		w.err = os.ErrDeadlineExceeded
	case w.limit >= 0 && int64(w.buf.Len())+int64(len(p)) > w.limit:
		w.err = errOverLimit
	default:
		return w.buf.Write(p)
	}
	return 0, w.err
}

func (w *limitWriter) Flush() error { return nil }
