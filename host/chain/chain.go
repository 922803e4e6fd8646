package chain

import (
	"errors"
	"net/http"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/runtime"
)

// Filter is the part of *runtime.Filter the chain uses. Request returns
// the Call by value: the chain keeps it in an array on its stack, so a
// request through the chain allocates nothing for it.
type Filter interface {
	Request(x runtime.HTTP) (runtime.Call, error)
}

// Chain is an exchange.Handler that runs filters around next.
type Chain struct {
	filters []Filter
	next    exchange.Handler
}

// maxInline is the number of filters whose calls are tracked without an
// allocation; longer chains still work.
const maxInline = 8

// New returns a handler running filters, in order, around next.
func New(filters []Filter, next exchange.Handler) *Chain {
	return &Chain{filters: filters, next: next}
}

// ServeExchange implements exchange.Handler.
func (c *Chain) ServeExchange(x exchange.Exchange) error {
	var inline [maxInline]runtime.Call
	calls := inline[:0]
	for _, f := range c.filters {
		call, err := f.Request(x)
		if err != nil {
			unwind(x, calls, true)
			return filterError(err)
		}
		if !call.Continues() { // the filter answered
			return unwind(x, calls, false)
		}
		calls = append(calls, call)
	}
	// A file or a stream stays one, also under buffer_response: the
	// runtime buffers it (bounded by the filter's max_buffer) only when a
	// guest reads it, so a filter that only changes headers costs no
	// memory however large the body (runtime/RATIONALE.md).
	err := c.next.ServeExchange(x)
	if uerr := unwind(x, calls, err != nil); err == nil {
		err = uerr
	}
	return err
}

// unwind runs the response phases of calls in reverse order. It returns
// the first failure, after giving every call its response phase.
func unwind(x exchange.Exchange, calls []runtime.Call, isError bool) error {
	var first error
	for i := len(calls) - 1; i >= 0; i-- {
		if err := calls[i].HandleResponse(x, isError); err != nil && first == nil {
			first = filterError(err)
			isError = true
		}
	}
	return first
}

// filterError maps a filter failure to the status a client sees: 503 when
// the filter was too slow, had no free instance, or lost the instance of
// the request to another request's timeout (the client did nothing
// wrong, and may retry), 500 otherwise. A body
// read the host stopped gets what nginx answers: 413 for a request body
// over max_buffer, 408 for a client too slow to send it, 502 for a
// response body over max_buffer, 504 for one too slow to arrive; a
// request body read error that carries a status (the listener's
// max_request_body) keeps it. The cause (filter name, trap) goes to the
// log, never to the client.
func filterError(err error) error {
	switch {
	case errors.Is(err, runtime.ErrRequestBodyTooLarge):
		return &exchange.Error{Status: http.StatusRequestEntityTooLarge, Message: "request body too large", Err: err}
	case errors.Is(err, runtime.ErrRequestBodyTimeout):
		return &exchange.Error{Status: http.StatusRequestTimeout, Message: "request body timeout", Err: err}
	case errors.Is(err, runtime.ErrResponseBodyTooLarge):
		return &exchange.Error{Status: http.StatusBadGateway, Message: "response too large for filter", Err: err}
	case errors.Is(err, runtime.ErrResponseBodyTimeout):
		return &exchange.Error{Status: http.StatusGatewayTimeout, Message: "response body timeout", Err: err}
	}
	var xe *exchange.Error
	if errors.As(err, &xe) && xe.Status != 0 {
		return &exchange.Error{Status: xe.Status, Message: xe.Message, Err: err}
	}
	if errors.Is(err, runtime.ErrTimeout) || errors.Is(err, runtime.ErrOverload) || errors.Is(err, runtime.ErrInstanceGone) {
		return &exchange.Error{Status: http.StatusServiceUnavailable, Message: "filter unavailable", Err: err}
	}
	return &exchange.Error{Status: http.StatusInternalServerError, Message: "filter failed", Err: err}
}
