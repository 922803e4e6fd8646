package httpwasm

import (
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/sluicehq/sluice/runtime/internal/core"
)

// Driver runs the ABI's two phases on one instance of the core: it holds
// the Invocation the host functions work on, the guest's two exports, and
// the stack of their calls, all allocated once with the instance. The
// caller holds the instance's lock around each phase, and decides what
// the outcome means for the instance (retire it, put it back).
type Driver struct {
	// Inv is the state of the calls, which the host functions find
	// through the instance's context (core.Instance.Init with
	// InvocationKey{} and &Inv).
	Inv        Invocation
	handleReq  api.Function
	handleResp api.Function
	stack      [2]uint64
}

// Bind finds the guest's exports on mod, once it started.
func (d *Driver) Bind(mod api.Module) {
	d.handleReq = mod.ExportedFunction(FuncHandleRequest)
	d.handleResp = mod.ExportedFunction(FuncHandleResponse)
}

// Request is the outcome of handle_request.
type Request struct {
	// Next: the guest continues to the next handler, whose response
	// phase gets ReqCtx and Features (those enabled at start and in the
	// call). Otherwise it answered the request itself.
	Next     bool
	ReqCtx   uint32
	Features Features
	// Fired: the call ran past its deadline.
	Fired bool
	// CallErr is the guest call's failure (a trap, the deadline); the
	// call's response header changes are undone.
	CallErr error
	// EndErr is what stopped a body read (the guest returned normally).
	EndErr error
}

// HandleRequest runs handle_request on x through inst's deadline call,
// with the features enabled at start; with hold, the host already read
// the whole request body, held (Invocation.HoldRequestBody).
func (d *Driver) HandleRequest(inst *core.Instance, x HTTP, features Features, held []byte, hold bool, now int64, timeout time.Duration) Request {
	d.Inv.Begin(x, PhaseRequest, features)
	if hold {
		d.Inv.HoldRequestBody(held)
	}
	stack := d.stack[:1]
	var r Request
	r.Fired, r.CallErr = d.call(inst, d.handleReq, stack, now, timeout)
	ctxNext := stack[0]
	r.Next = r.CallErr == nil && uint32(ctxNext) != 0
	r.ReqCtx = uint32(ctxNext >> 32)
	r.Features = d.Inv.Features()
	r.EndErr = d.Inv.End(r.Next)
	if r.CallErr != nil {
		d.Inv.Rollback(x)
	}
	return r
}

// HandleResponse runs handle_response on x for the request whose
// handle_request returned reqCtx and enabled features; isError tells the
// guest the next handler failed. It reports whether the deadline fired,
// the call's failure (its header changes undone) and what stopped a body
// read.
func (d *Driver) HandleResponse(inst *core.Instance, x HTTP, features Features, reqCtx uint32, isError bool, now int64, timeout time.Duration) (fired bool, callErr, endErr error) {
	d.Inv.Begin(x, PhaseResponse, features)
	stack := d.stack[:2]
	stack[0] = uint64(reqCtx)
	stack[1] = 0
	if isError {
		stack[1] = 1
	}
	fired, callErr = d.call(inst, d.handleResp, stack, now, timeout)
	endErr = d.Inv.End(false)
	if callErr != nil {
		d.Inv.Rollback(x)
	}
	return fired, callErr, endErr
}

// Start runs the guest's start function (_initialize or _start) under
// inst's deadline call.
func (d *Driver) Start(inst *core.Instance, fn api.Function, now int64, timeout time.Duration) (fired bool, err error) {
	return d.call(inst, fn, nil, now, timeout)
}

// call runs fn under the deadline timeout from now (core.Mono), which the
// host functions see too (Invocation.Deadline).
func (d *Driver) call(inst *core.Instance, fn api.Function, stack []uint64, now int64, timeout time.Duration) (bool, error) {
	d.Inv.Deadline = core.MonoTime(now + int64(timeout))
	return inst.Call(fn, stack, now, timeout)
}
