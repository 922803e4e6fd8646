package runtime

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/runtime/internal/httpwasm"
)

// Errors returned by filter calls, wrapped as
// `filter "NAME": handle_request: <sentinel>: <cause>`. Test them with
// errors.Is. The host answers ErrTimeout and ErrOverload with 503, the
// body errors (ErrRequestBodyTooLarge and the like) as each says, and the
// others with 500.
var (
	// ErrTrap: the guest trapped (unreachable, out-of-bounds access, a
	// panic, proc_exit, or an ABI violation). Its instance is replaced.
	ErrTrap = errors.New("wasm trap")
	// ErrABI: the guest broke the http_handler ABI (a pointer outside its
	// memory, an unknown enum value, a write after the response was
	// committed, an oversized header). Always wrapped with ErrTrap.
	ErrABI = httpwasm.ErrABI
	// ErrTimeout: the guest ran past the filter's timeout. Its instance
	// is replaced.
	ErrTimeout = errors.New("deadline exceeded")
	// ErrMemory: the guest trapped after trying to grow its memory past
	// the filter's memory limit. Its instance is replaced.
	ErrMemory = errors.New("memory limit exceeded")
	// ErrOverload: no instance became idle within the filter's timeout.
	ErrOverload = errors.New("overloaded: no idle instance")
	// ErrInstanceGone: the instance that ran handle_request of this call
	// was closed before handle_response could run: another request's
	// timeout closed it on a module whose deadline is wazero's own (one
	// with a start section, or a platform without the compiler); see
	// RATIONALE.md, "Why does a timeout not fail the other requests of
	// its instance?". The host answers 503, as for ErrTimeout.
	ErrInstanceGone = errors.New("instance gone before handle_response")
	// ErrClosed: the filter or engine is closed.
	ErrClosed = errors.New("closed")
	// ErrCallDone: HandleResponse or Release was called twice on a Call.
	ErrCallDone = errors.New("call already finished")

	// The host stopped a body read of the guest (it saw the body end
	// early and returned normally; its instance stays in service). The
	// host answers 413, 502, 408 and 504 respectively.

	// ErrRequestBodyTooLarge: the request body the guest read with
	// buffer_request is over FilterOptions.MaxBuffer.
	ErrRequestBodyTooLarge = httpwasm.ErrRequestBodyTooLarge
	// ErrResponseBodyTooLarge: the response body the guest read is over
	// FilterOptions.MaxBuffer.
	ErrResponseBodyTooLarge = httpwasm.ErrResponseBodyTooLarge
	// ErrRequestBodyTimeout: the client did not send the request body the
	// guest read before the call's deadline.
	ErrRequestBodyTimeout = httpwasm.ErrRequestBodyTimeout
	// ErrResponseBodyTimeout: the next handler's response body the guest
	// read did not arrive before the call's deadline.
	ErrResponseBodyTimeout = httpwasm.ErrResponseBodyTimeout
)

// Observer outcomes, one per invocation.
const (
	OutcomeOK       = "ok"       // handle_request continued, or handle_response returned
	OutcomeAnswered = "answered" // handle_request answered the request itself
	OutcomeTrap     = "trap"
	OutcomeTimeout  = "timeout"
	OutcomeMemory   = "memory"
	OutcomeOverload = "overload"
	OutcomeError    = "error" // closed filter, gone instance, body read error
	// OutcomeBufferLimit: a body the guest read was over max_buffer.
	OutcomeBufferLimit = "buffer_limit"
	// OutcomeBodyTimeout: a body the guest read did not arrive in time.
	OutcomeBodyTimeout = "body_timeout"
)

// SetupError is an instance that failed to start: its _initialize or
// _start trapped, exited, ran past FilterOptions.InitTimeout or outgrew
// the memory limit. NewFilter and Swap return it wrapped as
// `filter "NAME": <SetupError>`. What the guest logged and wrote to
// stdout and stderr while starting is in it, and is not logged: the error
// reads
//
//	MESSAGE
//		OUTPUT…
//		_initialize failed: CAUSE
//
// where MESSAGE is what the guest said, the first line it logged at error
// level or else the first it wrote to stderr ("setup failed" when it said
// nothing), and OUTPUT the rest of what it logged and wrote, in order.
type SetupError struct {
	// Start is the start function that failed: "_initialize" or "_start".
	Start string
	// Message is what the guest said; empty when it said nothing.
	Message string
	// Output is the rest of what the guest logged and wrote to stdout and
	// stderr while starting, one line each, in order.
	Output []string
	// Err is the cause; it wraps ErrTrap, ErrTimeout or ErrMemory.
	Err error
}

func (e *SetupError) Error() string {
	var b strings.Builder
	msg := e.Message
	if msg == "" {
		msg = "setup failed"
	}
	b.WriteString(msg)
	for _, line := range e.Output {
		b.WriteByte('\n')
		if line != "" {
			b.WriteByte('\t')
			b.WriteString(line)
		}
	}
	// wazero names the function again: "module[] function[_start] failed: …".
	cause := strings.Replace(e.Err.Error(), "module[] function["+e.Start+"] failed: ", "", 1)
	first, rest, _ := strings.Cut(cause, "\n")
	fmt.Fprintf(&b, "\n\t%s failed: %s", e.Start, first)
	if e.Message == "" && rest != "" {
		// Where it trapped is all there is to go on.
		for line := range strings.SplitSeq(rest, "\n") {
			b.WriteString("\n\t")
			b.WriteString(line)
		}
	}
	return b.String()
}

func (e *SetupError) Unwrap() error { return e.Err }
