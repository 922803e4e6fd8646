package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/tetratelabs/wazero/sys"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/runtime/internal/httpwasm"
	"github.com/sluicehq/sluice/runtime/internal/pool"
)

// Call is a request that went on to the next handler after
// handle_request. Exactly one of HandleResponse or Release must follow.
type Call struct {
	f        *Filter
	mp       *modulePool
	inst     *instance
	reqCtx   uint32
	features httpwasm.Features
	done     bool
}

// Features are the features in effect for this request: those enabled at
// start plus any the guest enabled in handle_request.
func (c *Call) Features() Features { return Features(c.features) }

// Continues reports whether the guest continued to the next handler: a
// Call from Request that is not the zero Call.
func (c *Call) Continues() bool { return c.inst != nil }

// HandleRequest runs the guest's handle_request. It returns a Call when
// the guest continues to the next handler, and nil (and no error) when it
// answered the request itself, in x. On error the request must be failed;
// see the Err variables for which status to answer with.
func (f *Filter) HandleRequest(x HTTP) (*Call, error) {
	c, err := f.Request(x)
	if err != nil || !c.Continues() {
		return nil, err
	}
	p := new(Call)
	*p = c
	return p, nil
}

// Request is HandleRequest returning the Call by value, so that a caller
// that keeps it in place allocates nothing (the host's chain keeps its
// calls in an array on its stack). The Call is the zero Call, whose
// Continues is false, when the guest answered the request or on error.
// A copy of a Call must not be used once one copy finished.
func (f *Filter) Request(x HTTP) (Call, error) {
	start := mono()
	mp, err := f.acquire()
	if err != nil {
		return Call{}, f.finish(nil, nil, httpwasm.PhaseRequest, OutcomeError, start, err)
	}
	span := f.startSpan(x, mp, httpwasm.PhaseRequest)
	now := start // when the guest call starts: later if it waited
	var body []byte
	held := mp.features&httpwasm.FeatureBufferRequest != 0
	if held {
		if body, err = f.readRequestBody(x); err != nil {
			mp.Release()
			return Call{}, f.finish(span, mp, httpwasm.PhaseRequest, bodyOutcome(err), start, err)
		}
		now = mono()
	}
	inst, now, err := takeInstance(mp, now, f.opts.Timeout)
	if err != nil {
		mp.Release()
		if errors.Is(err, pool.ErrTimeout) {
			return Call{}, f.finish(span, mp, httpwasm.PhaseRequest, OutcomeOverload, start, ErrOverload)
		}
		return Call{}, f.finish(span, mp, httpwasm.PhaseRequest, OutcomeError, start, ErrClosed)
	}

	r := inst.drv.HandleRequest(&inst.Instance, x, mp.features, body, held, now, f.opts.Timeout)
	if r.CallErr != nil || r.Fired {
		inst.retireLocked()
	}
	if r.CallErr != nil {
		outcome, cause := f.classify(inst, r.CallErr, r.Fired)
		inst.mu.Unlock()
		mp.Release()
		return Call{}, f.finish(span, mp, httpwasm.PhaseRequest, outcome, start, cause)
	}
	var c Call
	if r.Next {
		inst.outstanding++
		c = Call{f: f, mp: mp, inst: inst, reqCtx: r.ReqCtx, features: r.Features}
	}
	keep := !inst.retired.Load()
	if keep && f.opts.Reset == ResetRequest {
		if r.Next {
			keep = false // held until the request ends; see Call.end
		} else {
			keep = inst.resetLocked()
		}
	}
	inst.mu.Unlock()
	if keep {
		mp.Idle.Put(inst)
	}
	if r.EndErr != nil {
		// A body read the host stopped (over max_buffer, too slow) or
		// that failed: the guest returned normally and its instance is
		// back in the pool, but the request fails.
		if c.Continues() {
			c.Release()
		} else {
			mp.Release()
		}
		return Call{}, f.finish(span, mp, httpwasm.PhaseRequest, bodyOutcome(r.EndErr), start, r.EndErr)
	}
	if !c.Continues() {
		mp.Release()
		f.finish(span, mp, httpwasm.PhaseRequest, OutcomeAnswered, start, nil)
		return Call{}, nil
	}
	f.finish(span, mp, httpwasm.PhaseRequest, OutcomeOK, start, nil)
	return c, nil
}

// takeInstance takes an idle instance of mp, waiting up to timeout, and
// returns it locked, with now moved to when it was had if it waited (for
// an instance, or for a response phase running on it). An instance
// retired or closed while idle is let go and another taken.
func takeInstance(mp *modulePool, now int64, timeout time.Duration) (*instance, int64, error) {
	for {
		inst, ok := mp.Idle.TryGet()
		if !ok {
			var err error
			if inst, err = mp.Idle.Get(timeout); err != nil {
				return nil, now, err
			}
			now = mono()
		}
		if !inst.mu.TryLock() { // a response phase runs on it
			inst.mu.Lock()
			now = mono()
		}
		if !inst.retired.Load() && !inst.Mod.IsClosed() {
			return inst, now, nil
		}
		inst.retireLocked() // retired or closed while idle; no-op when retired
		inst.mu.Unlock()
	}
}

// HandleResponse runs the guest's handle_response on the instance that
// ran handle_request, after the next handler. isError tells the guest the
// next handler failed. It must be called at most once, and not after
// Release.
func (c *Call) HandleResponse(x HTTP, isError bool) error {
	f := c.f
	if c.done {
		return fmt.Errorf("filter %q: handle_response: %w", f.name, ErrCallDone)
	}
	c.done = true
	start := mono()
	span := f.startSpan(x, c.mp, httpwasm.PhaseResponse)
	inst := c.inst
	now := start // when the guest call starts: later if it waited
	if !inst.mu.TryLock() {
		inst.mu.Lock()
		now = mono()
	}
	if inst.closed || inst.Mod.IsClosed() { // a timeout on another call closed it
		inst.outstanding--
		inst.retireLocked()
		if inst.outstanding == 0 {
			inst.closeLocked()
		}
		inst.mu.Unlock()
		c.mp.Release()
		return f.finish(span, c.mp, httpwasm.PhaseResponse, OutcomeError, start, ErrInstanceGone)
	}
	fired, callErr, endErr := inst.drv.HandleResponse(&inst.Instance, x, c.features, c.reqCtx, isError, now, f.opts.Timeout)
	inst.outstanding--
	if callErr != nil || fired {
		inst.retireLocked()
	}
	if inst.retired.Load() && inst.outstanding == 0 {
		inst.closeLocked()
	}
	var outcome string
	var cause error
	if callErr != nil {
		outcome, cause = f.classify(inst, callErr, fired)
	}
	c.end()
	if callErr != nil {
		return f.finish(span, c.mp, httpwasm.PhaseResponse, outcome, start, cause)
	}
	if endErr != nil {
		return f.finish(span, c.mp, httpwasm.PhaseResponse, bodyOutcome(endErr), start, endErr)
	}
	f.finish(span, c.mp, httpwasm.PhaseResponse, OutcomeOK, start, nil)
	return nil
}

// Release ends a Call without running handle_response (the host gave up
// on the request). Calling it after HandleResponse does nothing.
func (c *Call) Release() {
	if c.done {
		return
	}
	c.done = true
	inst := c.inst
	inst.mu.Lock()
	inst.outstanding--
	if inst.retired.Load() && inst.outstanding == 0 {
		inst.closeLocked()
	}
	c.end()
}

// end ends the request on c's instance, whose lock the caller holds: it
// unlocks it and drops the call's reference to the module pool. Under
// ResetRequest the instance, held since handle_request, is reset and goes
// back to the pool.
func (c *Call) end() {
	inst := c.inst
	keep := c.f.opts.Reset == ResetRequest && inst.resetLocked()
	inst.mu.Unlock()
	if keep {
		c.mp.Idle.Put(inst)
	}
	c.mp.Release()
}

// classify turns a wazero error into an outcome and a cause wrapping the
// matching sentinel. Called with inst.mu held.
func (f *Filter) classify(inst *instance, err error, fired bool) (string, error) {
	err = demangleTrap(err)
	var exit *sys.ExitError
	switch {
	case fired:
		return OutcomeTimeout, fmt.Errorf("%w after %s", ErrTimeout, f.opts.Timeout)
	case errors.As(err, &exit) && exit.ExitCode() == sys.ExitCodeDeadlineExceeded:
		return OutcomeTimeout, fmt.Errorf("%w after %s", ErrTimeout, f.opts.Timeout)
	case errors.As(err, &exit) && exit.ExitCode() == sys.ExitCodeContextCanceled:
		return OutcomeError, fmt.Errorf("%w: %w", ErrClosed, err)
	case inst.Mem.Hit():
		return OutcomeMemory, fmt.Errorf("%w (%d bytes): %w", ErrMemory, f.opts.MemoryLimit, err)
	}
	return OutcomeTrap, fmt.Errorf("%w: %w", ErrTrap, err)
}

// finish records an invocation: counters, observer, span, log. It returns
// err wrapped with the filter and phase, or nil.
func (f *Filter) finish(span trace.Span, mp *modulePool, phase httpwasm.Phase, outcome string, start int64, err error) error {
	f.invocations.Add(1)
	switch {
	case err == nil:
	case outcome == OutcomeBufferLimit || outcome == OutcomeBodyTimeout:
		// The client or the next handler is at fault, not the filter: no
		// error counted against the filter; the outcome says what
		// happened. Over max_buffer is a warning (an attack, or a limit
		// set too low); a slow client is routine.
		err = fmt.Errorf("filter %q: handle_%s: %w", f.name, phase, err)
		level := slog.LevelWarn
		msg := "filter body over max_buffer"
		if outcome == OutcomeBodyTimeout {
			level, msg = slog.LevelInfo, "filter body read timed out"
		}
		f.log.Log(context.Background(), level, msg, "phase", phase.String(), "outcome", outcome,
			"max_buffer", f.opts.MaxBuffer, "timeout", f.opts.Timeout, "err", err)
	default:
		f.errors.Add(1)
		err = fmt.Errorf("filter %q: handle_%s: %w", f.name, phase, err)
		attrs := []any{"phase", phase.String(), "outcome", outcome, "err", err}
		if mp != nil {
			attrs = append(attrs, "digest", mp.m.digest)
		}
		f.log.Warn("filter invocation failed", attrs...)
	}
	if f.e.obs != nil {
		f.e.obs.Invocation(f.name, phase.String(), outcome, time.Duration(mono()-start))
	}
	if span != nil {
		endSpan(span, outcome, err)
	}
	return err
}

// bodyOutcome is the outcome of a call whose body read the host stopped.
func bodyOutcome(err error) string {
	switch {
	case errors.Is(err, ErrRequestBodyTooLarge), errors.Is(err, ErrResponseBodyTooLarge):
		return OutcomeBufferLimit
	case errors.Is(err, ErrRequestBodyTimeout), errors.Is(err, ErrResponseBodyTimeout):
		return OutcomeBodyTimeout
	}
	return OutcomeError
}
