package chain

import (
	"errors"
	"net/http"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/runtime"
)

// Filter is the part of *runtime.Filter the chain uses.
type Filter interface {
	HandleRequest(x runtime.HTTP) (*runtime.Call, error)
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
	var inline [maxInline]*runtime.Call
	calls := inline[:0]
	var buffer bool
	for _, f := range c.filters {
		call, err := f.HandleRequest(x)
		if err != nil {
			unwind(x, calls, true)
			return filterError(err)
		}
		if call == nil { // the filter answered
			return unwind(x, calls, false)
		}
		calls = append(calls, call)
		buffer = buffer || call.Features()&runtime.FeatureBufferResponse != 0
	}
	err := c.next.ServeExchange(x)
	if err == nil && buffer {
		// The guest reads and may rewrite the body: make a file or a
		// stream into bytes it can see.
		if berr := x.BufferBody(); berr != nil {
			err = berr
		}
	}
	if uerr := unwind(x, calls, err != nil); err == nil {
		err = uerr
	}
	return err
}

// unwind runs the response phases of calls in reverse order. It returns
// the first failure, after giving every call its response phase.
func unwind(x exchange.Exchange, calls []*runtime.Call, isError bool) error {
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
// the filter was too slow or had no free instance, 500 otherwise. The
// cause (filter name, trap) goes to the log, never to the client.
func filterError(err error) error {
	if errors.Is(err, runtime.ErrTimeout) || errors.Is(err, runtime.ErrOverload) {
		return &exchange.Error{Status: http.StatusServiceUnavailable, Message: "filter unavailable", Err: err}
	}
	return &exchange.Error{Status: http.StatusInternalServerError, Message: "filter failed", Err: err}
}
