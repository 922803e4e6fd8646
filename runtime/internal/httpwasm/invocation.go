package httpwasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"
)

// Phase is what the guest is being called for.
type Phase uint8

const (
	// PhaseInit is instantiation (_initialize or _start): no request.
	PhaseInit Phase = iota
	// PhaseRequest is handle_request: before the next handler.
	PhaseRequest
	// PhaseResponse is handle_response: after the next handler.
	PhaseResponse
)

func (p Phase) String() string {
	switch p {
	case PhaseRequest:
		return "request"
	case PhaseResponse:
		return "response"
	}
	return "init"
}

// InvocationKey is the context key under which the host functions find
// the *Invocation of the calling instance.
type InvocationKey struct{}

// WithInvocation returns ctx carrying inv.
func WithInvocation(ctx context.Context, inv *Invocation) context.Context {
	return context.WithValue(ctx, InvocationKey{}, inv)
}

// Invocation is the per-instance state the host functions work on. One
// lives in each instance and is reused for every call on it; the caller
// holds the instance lock from Begin to End.
type Invocation struct {
	// Config is returned by get_config.
	Config []byte
	// Logger receives log calls; it already carries the filter name.
	Logger *slog.Logger
	// InitFeatures are those the guest enabled outside a request (in
	// _start or _initialize); every request starts with them.
	InitFeatures Features
	// MaxBuffer is the most body bytes the host holds for the guest: a
	// request body read with buffer_request, or the response body it
	// reads. Negative means none at all.
	MaxBuffer int64
	// Deadline is when the current guest call times out; the caller sets
	// it before each call. Host calls that wait on the client or the
	// next handler's body stop waiting Reserve before it, so that the
	// guest, which then sees its body end early, still returns in time.
	Deadline time.Time
	Reserve  time.Duration

	x        HTTP
	phase    Phase
	features Features

	reqBody    io.Reader // lazily x.RequestBody()
	reqHeld    []byte    // the whole request body, read before the call (HoldRequestBody)
	held       bool
	reqBuf     []byte // what the guest read, when buffering
	reqBuffer  bool   // buffer_request was on at the first read
	reqOut     []byte // request body written by the guest
	reqWritten bool
	respBody   bytes.Reader
	respOpen   bool
	respWrote  bool

	bodyErr error     // why the host stopped a body read; fails the request
	rdAt    time.Time // read deadline set on x, zero when none
	rdConn  bool      // x enforces rdAt itself (ReadDeadliner)
	reqEOF  bool      // the request body was read to io.EOF

	headerBytes int
	bodyBytes   int

	// saved holds, for each response header field the call changed, its
	// values before the first change, for Rollback. It outlives End.
	saved []savedField

	scratch []byte
	spans   [][2]int
	strings interner // header names and values the guest set

	// get_header_values: the field looked for, the values found, and
	// collectHeader bound to inv.
	visitName  []byte
	visitCount int
	visit      func(name, value []byte)
}

// Begin prepares a guest call for x in phase with the given features.
func (inv *Invocation) Begin(x HTTP, phase Phase, features Features) {
	inv.x, inv.phase, inv.features = x, phase, features
	clear(inv.saved)
	inv.saved = inv.saved[:0]
}

// HoldRequestBody tells the call that begins (after Begin, before the
// call) that the host already read the whole request body, b, and set it
// as x's: the guest's reads need no buffering, and after the call, if the
// guest read it, b is set again for the next handler.
func (inv *Invocation) HoldRequestBody(b []byte) { inv.reqHeld, inv.held = b, true }

// savedField is a response header field as it was before a call changed
// it: its name and values (none when it was absent).
type savedField struct {
	name   string
	values []string
}

// saveResponseHeader keeps name's values before the call's first change
// of it.
func (inv *Invocation) saveResponseHeader(name string) {
	for _, s := range inv.saved {
		if strings.EqualFold(s.name, name) {
			return
		}
	}
	if inv.x.ResponseHeader(name) == nil {
		inv.saved = append(inv.saved, savedField{name: name})
		return
	}
	inv.saved = append(inv.saved, inv.presentResponseHeader(name))
}

// presentResponseHeader returns the values of name, a field x has. It is
// apart from saveResponseHeader because the closure moves its result to
// the heap: setting a field the response lacks allocates nothing here.
func (inv *Invocation) presentResponseHeader(name string) savedField {
	var s savedField
	inv.x.VisitResponseHeaders(func(n, v []byte) {
		if strings.EqualFold(string(n), name) {
			if s.name == "" {
				s.name = string(n) // restored as it was spelled
			}
			s.values = append(s.values, string(v))
		}
	})
	if s.name == "" {
		s.name = name
	}
	return s
}

// Rollback undoes the response header changes of the last call on x, a
// call that failed: the host renders its error on a response that has
// none of them. End calls it for a call whose body read the host stopped;
// the caller calls it, after End, for a call that trapped or timed out.
func (inv *Invocation) Rollback(x HTTP) {
	for i := len(inv.saved) - 1; i >= 0; i-- { // last change first: undo order
		s := inv.saved[i]
		x.DelResponseHeader(s.name)
		for _, v := range s.values {
			x.AddResponseHeader(s.name, v)
		}
	}
	clear(inv.saved)
	inv.saved = inv.saved[:0]
}

// Features are those in effect for the current request.
func (inv *Invocation) Features() Features { return inv.features }

// End finishes a guest call. After a request phase that continues to the
// next handler it hands a body the guest wrote to the request, or, with
// buffer_request, puts back the body the guest read, reading the rest of
// it bounded by MaxBuffer and Deadline. It returns the error that stopped
// a body read (one of the ErrRequestBody…/ErrResponseBody… errors, or the
// request body's own read error); the request must then fail, but the
// guest returned normally and its instance is fine.
func (inv *Invocation) End(next bool) error {
	if inv.phase == PhaseRequest && next && inv.bodyErr == nil {
		switch {
		case inv.reqWritten:
			inv.x.SetRequestBody(inv.reqOut)
		case inv.held && inv.reqBody != nil:
			inv.x.SetRequestBody(inv.reqHeld)
		case inv.reqBuffer && inv.reqBody != nil:
			// The guest has returned and its timer is stopped: the rest
			// may take until the deadline itself.
			if !inv.reqEOF {
				rest := inv.scratchFor(inv.MaxBuffer)
				for inv.bodyErr == nil && !inv.reqEOF {
					n, _ := inv.readRequest(rest, inv.Deadline)
					inv.bufferRequest(rest[:n])
				}
			}
			if inv.bodyErr == nil {
				inv.x.SetRequestBody(inv.reqBuf)
			}
		}
	}
	err := inv.bodyErr
	if err != nil {
		inv.Rollback(inv.x)
	}
	if !inv.rdAt.IsZero() && err == nil {
		// The next handler reads the rest of the body, if any, and the
		// connection its next request: not under the filter's deadline.
		// After a timeout or an error the request fails, and the passed
		// deadline keeps the engine from waiting on the client again.
		if d, ok := inv.x.(ReadDeadliner); ok {
			_ = d.SetReadDeadline(time.Time{})
		}
	}
	inv.x = nil
	inv.phase = PhaseInit
	inv.reqBody, inv.reqBuf, inv.reqBuffer = nil, nil, false
	inv.reqHeld, inv.held = nil, false
	inv.reqOut, inv.reqWritten = nil, false
	inv.respBody.Reset(nil)
	inv.respOpen, inv.respWrote = false, false
	inv.headerBytes, inv.bodyBytes = 0, 0
	inv.bodyErr, inv.rdAt, inv.rdConn, inv.reqEOF = nil, time.Time{}, false, false
	if cap(inv.scratch) > 64<<10 { // don't keep a huge buffer for one odd request
		inv.scratch = nil
	}
	return err
}

// scratchFor returns a read buffer of 32 KiB, or less for a small limit.
func (inv *Invocation) scratchFor(limit int64) []byte {
	n := int64(32 << 10)
	if limit >= 0 && limit+1 < n {
		n = limit + 1
	}
	if int64(cap(inv.scratch)) < n {
		inv.scratch = make([]byte, n)
	}
	return inv.scratch[:n]
}

// openRequest starts reading the request body.
func (inv *Invocation) openRequest() {
	if inv.reqBody != nil {
		return
	}
	inv.reqBody = inv.x.RequestBody()
	if inv.reqBody == nil {
		inv.reqBody = bytes.NewReader(nil)
	}
	inv.reqBuffer = inv.phase == PhaseRequest && inv.features&FeatureBufferRequest != 0 && !inv.held
}

// readRequest fills p from the request body, waiting on the client until
// until at the latest. It returns io.EOF at the end of the body, and also
// when a read failed or timed out: the guest sees the body end, and
// inv.bodyErr says why.
func (inv *Invocation) readRequest(p []byte, until time.Time) (n int, err error) {
	if inv.bodyErr != nil || inv.reqEOF {
		return 0, io.EOF
	}
	if !inv.held && !inv.rdAt.Equal(until) { // a held body is in memory: no waiting
		inv.rdAt = until
		d, ok := inv.x.(ReadDeadliner)
		inv.rdConn = ok && d.SetReadDeadline(until) == nil
	}
	for n < len(p) && err == nil {
		if !inv.rdConn && !time.Now().Before(until) {
			err = os.ErrDeadlineExceeded
			break
		}
		var nn int
		nn, err = inv.reqBody.Read(p[n:])
		n += nn
	}
	switch {
	case err == nil:
		return n, nil
	case err == io.EOF:
		inv.reqEOF = true
	case errors.Is(err, os.ErrDeadlineExceeded) || !time.Now().Before(until):
		inv.bodyErr = ErrRequestBodyTimeout
	default:
		inv.bodyErr = fmt.Errorf("read request body: %w", err)
	}
	return n, io.EOF
}

// bufferRequest keeps what the guest read of a buffered request body, up
// to MaxBuffer: past it the body is over the limit and ends here.
func (inv *Invocation) bufferRequest(b []byte) {
	if inv.bodyErr != nil {
		return
	}
	if inv.MaxBuffer >= 0 && int64(len(inv.reqBuf))+int64(len(b)) > inv.MaxBuffer {
		inv.bodyErr = fmt.Errorf("%w (%d bytes)", ErrRequestBodyTooLarge, inv.MaxBuffer)
		inv.reqBuf = nil
		return
	}
	inv.reqBuf = append(inv.reqBuf, b...)
}

// openResponse makes the response body readable: a file or a stream is
// buffered now, the first time the guest reads it, bounded by MaxBuffer
// and the call's deadline.
func (inv *Invocation) openResponse() {
	if inv.respOpen {
		return
	}
	inv.respOpen = true
	if b, ok := inv.x.(BodyBufferer); ok {
		fits, err := b.BufferBodyLimit(inv.MaxBuffer, inv.Deadline.Add(-inv.Reserve))
		switch {
		case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
			inv.bodyErr = ErrResponseBodyTimeout
		case err != nil:
			inv.bodyErr = fmt.Errorf("read response body: %w", err)
		case !fits:
			inv.bodyErr = fmt.Errorf("%w (%d bytes)", ErrResponseBodyTooLarge, inv.MaxBuffer)
		}
		if inv.bodyErr != nil {
			return
		}
	}
	body := inv.x.ResponseBody()
	if inv.MaxBuffer >= 0 && int64(len(body)) > inv.MaxBuffer {
		// A body set whole by the next handler (or a filter after it):
		// already in memory, but the guest reads no more than the limit.
		inv.bodyErr = fmt.Errorf("%w (%d bytes)", ErrResponseBodyTooLarge, inv.MaxBuffer)
		return
	}
	inv.respBody.Reset(body)
}
