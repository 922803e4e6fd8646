package runtime

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// readRequestBody reads x's request body whole, before the request takes
// an instance, for a filter whose guest enabled buffer_request at start:
// a client that sends its body slowly then holds a buffer (at most
// MaxBuffer bytes) for at most BodyTimeout, never an instance that other
// requests wait for (issue 21, finding 7; RATIONALE.md, "Why is a
// buffered request body read before an instance is taken?"). It returns
// the body, nil when it is empty, and one of the ErrRequestBody… errors,
// or the body's own read error, when it could not be read.
func (f *Filter) readRequestBody(x HTTP) ([]byte, error) {
	r := x.RequestBody()
	if r == nil {
		return nil, nil
	}
	until := time.Now().Add(f.opts.BodyTimeout)
	d, ok := x.(ReadDeadliner)
	conn := ok && d.SetReadDeadline(until) == nil
	var buf []byte
	var err error
	for err == nil {
		if !conn && !time.Now().Before(until) {
			err = os.ErrDeadlineExceeded
			break
		}
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(max(512, cap(buf)), 1<<20))
		}
		limit := min(int64(cap(buf)), f.opts.MaxBuffer+1) // one byte past MaxBuffer tells it is over
		var n int
		n, err = r.Read(buf[len(buf):limit])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > f.opts.MaxBuffer {
			return nil, fmt.Errorf("%w (%d bytes)", ErrRequestBodyTooLarge, f.opts.MaxBuffer)
		}
	}
	switch {
	case err == io.EOF:
	case errors.Is(err, os.ErrDeadlineExceeded) || !time.Now().Before(until):
		// The deadline stays passed: the request fails, and the engine
		// must not wait on this client again.
		return nil, ErrRequestBodyTimeout
	default:
		return nil, fmt.Errorf("read request body: %w", err)
	}
	if conn {
		// The connection's next request is not under this deadline.
		_ = d.SetReadDeadline(time.Time{})
	}
	if len(buf) == 0 {
		return nil, nil
	}
	x.SetRequestBody(buf)
	return buf, nil
}
