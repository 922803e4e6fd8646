package abi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
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

	x        HTTP
	phase    Phase
	features Features

	reqBody    io.Reader // lazily x.RequestBody()
	reqBuf     []byte    // what the guest read, when buffering
	reqBuffer  bool      // buffer_request was on at the first read
	reqOut     []byte    // request body written by the guest
	reqWritten bool
	respBody   bytes.Reader
	respOpen   bool
	respWrote  bool

	headerBytes int
	bodyBytes   int

	scratch []byte
	spans   [][2]int
}

// Begin prepares a guest call for x in phase with the given features.
func (inv *Invocation) Begin(x HTTP, phase Phase, features Features) {
	inv.x, inv.phase, inv.features = x, phase, features
}

// Features are those in effect for the current request.
func (inv *Invocation) Features() Features { return inv.features }

// End finishes a guest call. After a request phase that continues to the
// next handler it hands a body the guest wrote to the request, or, with
// buffer_request, puts back the body the guest read. It returns an error
// only when reading the rest of a buffered body failed.
func (inv *Invocation) End(next bool) (err error) {
	if inv.phase == PhaseRequest && next {
		switch {
		case inv.reqWritten:
			inv.x.SetRequestBody(inv.reqOut)
		case inv.reqBuffer && inv.reqBody != nil:
			rest, rerr := io.ReadAll(inv.reqBody)
			if rerr != nil {
				err = fmt.Errorf("read request body: %w", rerr)
			}
			inv.x.SetRequestBody(append(inv.reqBuf, rest...))
		}
	}
	inv.x = nil
	inv.phase = PhaseInit
	inv.reqBody, inv.reqBuf, inv.reqBuffer = nil, nil, false
	inv.reqOut, inv.reqWritten = nil, false
	inv.respBody.Reset(nil)
	inv.respOpen, inv.respWrote = false, false
	inv.headerBytes, inv.bodyBytes = 0, 0
	if cap(inv.scratch) > 64<<10 { // don't keep a huge buffer for one odd request
		inv.scratch = nil
	}
	return err
}
