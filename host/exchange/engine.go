package exchange

import (
	"io"
	"net"
	"os"
	"time"
)

// What an engine adapter outside this package (host/h2) needs to serve
// the same Exchange contract as Fast and Std.

// Hooks is embedded by an adapter outside this package so that the front
// door's per-request hooks reach it: SetClient, PeerTrusted, SetRawPath
// and RawPath work on it as on Fast and Std.
type Hooks struct {
	conn
	rawPaths
}

// Client returns the client's address as SetClient recorded it, or nil
// when the peer is the client.
func (h *Hooks) Client() net.Addr { return h.client }

// ResetHooks forgets what the front door recorded, for a pooled adapter.
func (h *Hooks) ResetHooks() { *h = Hooks{} }

// NewLimitedBody returns r failing with ErrBodyTooLarge once more than n
// bytes have been read: what LimitRequestBody installs. An adapter's
// LimitRequestBody(n) method uses it.
func NewLimitedBody(r io.Reader, n int64) io.Reader { return &limitedBody{r: r, n: n} }

// ReadBounded reads r to io.EOF, but never more than limit+1 bytes (no
// limit when negative): fits is false when there were more than limit. A
// non-zero deadline is checked before each read. It is what
// BufferBodyLimit does on a reader.
func ReadBounded(r io.Reader, limit int64, deadline time.Time) (b []byte, fits bool, err error) {
	return readBounded(r, limit, deadline)
}

// BufferStream runs a Stream producer into memory under the rules of
// BufferBodyLimit: at most limit bytes (none when negative), writes
// refused once deadline (when not zero) has passed.
func BufferStream(fn func(StreamWriter) error, limit int64, deadline time.Time) (b []byte, fits bool, err error) {
	w := &limitWriter{limit: limit, deadline: deadline}
	err = fn(w)
	switch {
	case w.err == errOverLimit: // also when fn ignored the error
		return nil, false, nil
	case w.err != nil:
		return nil, false, w.err
	}
	return w.buf.Bytes(), err == nil, err
}

// BodySource is a response body an adapter holds but has not read: a
// file region, a Stream producer or a reader of Size bytes (-1:
// unknown). At most one is set.
type BodySource struct {
	File   *os.File
	Off, N int64
	Stream func(StreamWriter) error
	Reader io.Reader
	Size   int64
}

// Pending reports whether a body is set and not read yet.
func (s *BodySource) Pending() bool { return s.File != nil || s.Stream != nil || s.Reader != nil }

// Release closes what is set (the file; the reader when it is an
// io.Closer) and clears s, so that nothing is sent or closed twice.
func (s *BodySource) Release() {
	if s.File != nil {
		_ = s.File.Close()
	}
	if s.Reader != nil {
		_ = closeReader(s.Reader)
	}
	*s = BodySource{}
}

// Buffer reads the body into memory under the rules of BufferBodyLimit:
// at most limit bytes (none when negative), the reads or writes refused
// once deadline (when not zero) has passed; a file is read whatever the
// deadline. ok is false when none is set: the body is in memory already.
func (s BodySource) Buffer(limit int64, deadline time.Time) (b []byte, fits, ok bool, err error) {
	switch {
	case s.File != nil:
		if limit >= 0 && s.N > limit {
			return nil, false, true, nil
		}
		b, fits, err = readBounded(io.NewSectionReader(s.File, s.Off, s.N), limit, time.Time{})
	case s.Stream != nil:
		b, fits, err = BufferStream(s.Stream, limit, deadline)
	case s.Reader != nil:
		if limit >= 0 && s.Size > limit {
			return nil, false, true, nil
		}
		b, fits, err = readBounded(s.Reader, limit, deadline)
	default:
		return nil, true, false, nil
	}
	return b, fits, true, err
}

// WillBlock tells the engine that the handler is about to wait on
// something other than its client: an upstream, say. An engine that runs
// handlers on its connection's read loop (host/h2) moves the loop to
// another goroutine, so that the connection's other requests go on. It
// does nothing on the other engines, whose handlers have a goroutine
// (or a connection) of their own.
func WillBlock(x Exchange) {
	if b, ok := x.(interface{ WillBlock() }); ok {
		b.WillBlock()
	}
}
