package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/filtertest"
)

// The whole life of a filter, as the host drives it: one engine per
// process, a module compiled once, a filter started from it, each request
// through HandleRequest and, when the guest continued, the next handler
// and HandleResponse. x is any runtime.HTTP: the host passes its exchange
// as is; here it is the in-memory one of runtime/filtertest.
func Example() {
	ctx := context.Background()
	e, err := runtime.NewEngine(ctx, runtime.EngineOptions{NoDiskCache: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer e.Close(ctx)

	wasm, _ := os.ReadFile("testdata/body.wasm") // copies the request body to x-guest-body, wraps the response
	m, err := e.Compile(ctx, wasm)               // off the request path; `sluice validate` does it too
	if err != nil {
		panic(err)
	}
	f, err := e.NewFilter(ctx, "wrap", m, runtime.FilterOptions{PoolSize: 2})
	m.Close(ctx) // the filter holds its own reference
	if err != nil {
		panic(err)
	}
	defer f.Close(ctx) // drains calls in flight

	x := filtertest.NewExchange("POST", "/upload")
	x.ReqBody = strings.NewReader("hello")
	c, err := f.HandleRequest(x)
	if err != nil {
		panic(err) // the host answers 503 for ErrTimeout and ErrOverload, else 500
	}
	if c != nil { // the guest continued: run the next handler, then handle_response
		x.SetBody([]byte("from upstream"))
		if err := c.HandleResponse(x, false); err != nil {
			panic(err)
		}
	}
	fmt.Println(x.Header("x-guest-body"))
	fmt.Println(x.RespBody.String())
	fmt.Println(c.Features())
	// Output:
	// hello
	// wrapped:from upstream
	// buffer_request|buffer_response
}

// A guest that answers the request itself returns no Call: the response
// is already in the exchange, and the next handler must not run.
func ExampleFilter_HandleRequest() {
	ctx := context.Background()
	e, _ := runtime.NewEngine(ctx, runtime.EngineOptions{NoDiskCache: true, Logger: slog.New(slog.DiscardHandler)})
	defer e.Close(ctx)
	wasm, _ := os.ReadFile("testdata/answer.wasm") // answers 403 "denied"
	m, _ := e.Compile(ctx, wasm)
	f, err := e.NewFilter(ctx, "deny", m, runtime.FilterOptions{})
	m.Close(ctx)
	if err != nil {
		panic(err)
	}
	defer f.Close(ctx)

	x := filtertest.NewExchange("GET", "/admin")
	c, err := f.HandleRequest(x)
	fmt.Println(c == nil, err, x.Status(), x.RespHeader("x-answered"), x.RespBody.String())
	// Output: true <nil> 403 yes denied
}

// Swap replaces the module of a running filter: calls in flight finish on
// the old instances, the next ones use the new module. Watch does it when
// the module's file changes.
func ExampleFilter_Swap() {
	ctx := context.Background()
	e, _ := runtime.NewEngine(ctx, runtime.EngineOptions{NoDiskCache: true, Logger: slog.New(slog.DiscardHandler)})
	defer e.Close(ctx)
	compile := func(name string) *runtime.Module {
		wasm, _ := os.ReadFile("testdata/" + name + ".wasm")
		m, err := e.Compile(ctx, wasm)
		if err != nil {
			panic(err)
		}
		return m
	}
	noop := compile("noop")
	f, _ := e.NewFilter(ctx, "gate", noop, runtime.FilterOptions{})
	noop.Close(ctx)
	defer f.Close(ctx)

	deny := compile("answer")
	defer deny.Close(ctx)
	if err := f.Swap(ctx, deny); err != nil {
		panic(err)
	}
	x := filtertest.NewExchange("GET", "/")
	if c, _ := f.HandleRequest(x); c != nil {
		c.Release()
	}
	fmt.Println(x.Status(), f.Stats().Swaps)
	// Output: 403 1
}

// A guest whose setup rejects its config fails NewFilter with a
// *SetupError, which carries what the guest wrote to stderr.
func ExampleSetupError() {
	ctx := context.Background()
	e, _ := runtime.NewEngine(ctx, runtime.EngineOptions{NoDiskCache: true, Logger: slog.New(slog.DiscardHandler)})
	defer e.Close(ctx)
	wasm, _ := os.ReadFile("testdata/start_trap.wasm") // traps in _start
	m, _ := e.Compile(ctx, wasm)
	defer m.Close(ctx)
	_, err := e.NewFilter(ctx, "broken", m, runtime.FilterOptions{})
	var se *runtime.SetupError
	fmt.Println(errors.As(err, &se))
	// Output: true
}
