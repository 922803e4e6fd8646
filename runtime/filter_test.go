package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/filtertest"
)

// TestFilter_Request: Request returns the Call by value; the zero Call
// when the guest answered, one that finishes like HandleRequest's when it
// continued.
func TestFilter_Request(t *testing.T) {
	tests := []struct {
		guest     string
		continues bool
	}{
		{"noop", true},
		{"set_header", true},
		{"answer", false},
	}
	for _, tc := range tests {
		t.Run(tc.guest, func(t *testing.T) {
			ev := newEnv(t)
			f := ev.filter(t, tc.guest, runtime.FilterOptions{PoolSize: 1})
			x := filtertest.NewExchange("GET", "/")
			c, err := f.Request(x)
			if err != nil {
				t.Fatal(err)
			}
			if c.Continues() != tc.continues {
				t.Fatalf("Continues = %v, want %v", c.Continues(), tc.continues)
			}
			if !tc.continues {
				if c != (runtime.Call{}) {
					t.Errorf("Call = %+v, want the zero Call", c)
				}
				return
			}
			if err := c.HandleResponse(x, false); err != nil {
				t.Fatal(err)
			}
			if err := c.HandleResponse(x, false); !errors.Is(err, runtime.ErrCallDone) {
				t.Errorf("second HandleResponse = %v, want ErrCallDone", err)
			}
			if s := f.Stats(); s.Invocations != 2 || s.Errors != 0 || s.Live != 1 {
				t.Errorf("stats = %+v", s)
			}
		})
	}
}

func TestFilter_Noop(t *testing.T) {
	ev := newEnv(t)
	f := ev.filter(t, "noop", runtime.FilterOptions{PoolSize: 2})
	x := filtertest.NewExchange("GET", "/")
	c, err := f.HandleRequest(x)
	if err != nil || c == nil {
		t.Fatalf("HandleRequest = %v, %v; want a Call", c, err)
	}
	if err := c.HandleResponse(x, false); err != nil {
		t.Fatal(err)
	}
	if err := c.HandleResponse(x, false); !errors.Is(err, runtime.ErrCallDone) {
		t.Errorf("second HandleResponse = %v, want ErrCallDone", err)
	}
	s := f.Stats()
	if s.Name != "noop" || s.PoolSize != 2 || s.Live != 2 || s.Invocations != 2 || s.Errors != 0 ||
		!strings.HasPrefix(s.Digest, "sha256:") {
		t.Errorf("stats = %+v", s)
	}
	if !ev.obs.has("noop request ok") || !ev.obs.has("noop response ok") {
		t.Errorf("observer calls = %v", ev.obs.calls)
	}
}

func TestFilter_Answer(t *testing.T) {
	ev := newEnv(t)
	f := ev.filter(t, "answer", runtime.FilterOptions{PoolSize: 1})
	x := filtertest.NewExchange("GET", "/")
	c, err := f.HandleRequest(x)
	if err != nil || c != nil {
		t.Fatalf("HandleRequest = %v, %v; want nil, nil", c, err)
	}
	if x.Status() != 403 || string(x.ResponseHeader("x-answered")) != "yes" || x.RespBody.String() != "denied" {
		t.Errorf("response = %d %v %q", x.Status(), x.RespHdr, x.RespBody.String())
	}
	if !ev.obs.has("answer request answered") {
		t.Errorf("observer calls = %v", ev.obs.calls)
	}
}

func TestFilter_SetHeader(t *testing.T) {
	ev := newEnv(t)
	f := ev.filter(t, "set_header", runtime.FilterOptions{PoolSize: 1})
	x := filtertest.NewExchange("GET", "/", "X-Sluice", "off", "Accept", "*/*")
	if _, err := roundTrip(f, x, nil); err != nil {
		t.Fatal(err)
	}
	if v := x.RequestHeader("x-sluice"); string(v) != "on" {
		t.Errorf("x-sluice = %q", v)
	}
}

func TestFilter_ConfigAndStart(t *testing.T) {
	ev := newEnv(t)
	// reqctx's _start enables buffer_response; body's _initialize asks
	// for all three features and gets the two this host has.
	if got := ev.filter(t, "reqctx", runtime.FilterOptions{PoolSize: 1}).Features(); got != runtime.FeatureBufferResponse {
		t.Errorf("reqctx features = %v", got)
	}
	want := runtime.FeatureBufferRequest | runtime.FeatureBufferResponse
	if got := ev.filter(t, "body", runtime.FilterOptions{PoolSize: 1}).Features(); got != want {
		t.Errorf("body features = %v, want %v (no trailers)", got, want)
	}
}

// TestFilter_Hammer_ResponseOnSameInstance: many concurrent requests,
// two instances, responses out of order; each handle_response must find
// the state its handle_request left under reqCtx.
func TestFilter_Hammer_ResponseOnSameInstance(t *testing.T) {
	ev := newEnv(t)
	f := ev.filter(t, "reqctx", runtime.FilterOptions{PoolSize: 2})
	// The guest keeps 1024 slots and reuses them in turn: in all, fewer
	// requests than that, or a worker held up while the others ran 1024
	// requests through its instance would find its slot taken over.
	const workers, perWorker = 8, 100
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each worker keeps several calls open and finishes them in
			// reverse order.
			for i := 0; i < perWorker; i += 4 {
				type open struct {
					c  *runtime.Call
					x  *filtertest.Exchange
					id string
				}
				var calls []open
				for j := range 4 {
					id := fmt.Sprintf("w%d-%d", w, i+j)
					x := filtertest.NewExchange("GET", "/", "x-id", id)
					c, err := f.HandleRequest(x)
					if err != nil || c == nil {
						errs <- fmt.Errorf("HandleRequest = %v, %v", c, err)
						return
					}
					calls = append(calls, open{c, x, id})
				}
				for j := len(calls) - 1; j >= 0; j-- {
					o := calls[j]
					if err := o.c.HandleResponse(o.x, false); err != nil {
						errs <- err
						return
					}
					if got := string(o.x.ResponseHeader("x-id-echo")); got != o.id {
						errs <- fmt.Errorf("x-id-echo = %q, want %q", got, o.id)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if s := f.Stats(); s.Live != 2 {
		t.Errorf("live = %d, want 2", s.Live)
	}
}

func TestFilter_Buffering(t *testing.T) {
	ev := newEnv(t)
	f := ev.filter(t, "body", runtime.FilterOptions{PoolSize: 1})
	x := filtertest.NewExchange("GET", "/")
	x.Meth = "POST"
	x.ReqBody = strings.NewReader("hello, body")
	c, err := f.HandleRequest(x)
	if err != nil || c == nil {
		t.Fatalf("HandleRequest = %v, %v", c, err)
	}
	if got := string(x.RequestHeader("x-guest-body")); got != "hello, body" {
		t.Errorf("guest read %q", got)
	}
	// buffer_request: the next handler still reads the whole body.
	b, _ := io.ReadAll(x.RequestBody())
	if string(b) != "hello, body" {
		t.Errorf("next handler read %q", b)
	}
	x.SetBody([]byte("from upstream"))
	if err := c.HandleResponse(x, false); err != nil {
		t.Fatal(err)
	}
	if got := x.RespBody.String(); got != "wrapped:from upstream" {
		t.Errorf("response body = %q", got)
	}
}

func TestFilter_WASIAndLog(t *testing.T) {
	ev := newEnv(t)
	f := ev.filter(t, "wasi", runtime.FilterOptions{PoolSize: 1})
	if _, err := roundTrip(f, filtertest.NewExchange("GET", "/"), nil); err != nil {
		t.Fatal(err)
	}
	logs := ev.log.String()
	for _, want := range []string{
		`msg="hello from stdout" filter=wasi source=stdout`,
		`msg="hello from log" filter=wasi source=guest`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
}

// TestFilter_ServicesLog: EngineOptions.Services.Log receives what the
// guest logs and writes, tagged as the engine's Logger would have it; the
// Logger keeps only the runtime's own records.
func TestFilter_ServicesLog(t *testing.T) {
	guestLogs := &logBuffer{}
	ev := newEnv(t, func(o *runtime.EngineOptions) {
		o.Services.Log = slog.New(slog.NewTextHandler(guestLogs, nil))
	})
	f := ev.filter(t, "wasi", runtime.FilterOptions{PoolSize: 1})
	if _, err := roundTrip(f, filtertest.NewExchange("GET", "/"), nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`msg="hello from stdout" filter=wasi source=stdout`,
		`msg="hello from log" filter=wasi source=guest`,
	} {
		if !strings.Contains(guestLogs.String(), want) {
			t.Errorf("Services.Log lacks %q:\n%s", want, guestLogs.String())
		}
		if strings.Contains(ev.log.String(), want) {
			t.Errorf("the engine's Logger got the guest's %q too", want)
		}
	}
}

// TestFilter_Isolation: each failure fails only its own request, is
// classified, logged with the filter name and counted, and its instance
// is replaced: the next request is served.
func TestFilter_Isolation(t *testing.T) {
	tests := []struct {
		guest   string
		config  string
		phase   string // where it fails
		want    error
		outcome string
		msg     string // in the error
	}{
		{guest: "loop", phase: "request", want: runtime.ErrTimeout, outcome: "timeout"},
		{guest: "unreachable", phase: "request", want: runtime.ErrTrap, outcome: "trap", msg: "unreachable"},
		{guest: "grow", phase: "request", want: runtime.ErrMemory, outcome: "memory"},
		{guest: "misuse", config: "p", phase: "request", want: runtime.ErrABI, outcome: "trap", msg: "outside memory"},
		{guest: "misuse", config: "n", phase: "request", want: runtime.ErrABI, outcome: "trap", msg: "outside memory"},
		{guest: "misuse", config: "h", phase: "request", want: runtime.ErrABI, outcome: "trap", msg: "over the limit"},
		{guest: "misuse", config: "k", phase: "request", want: runtime.ErrABI, outcome: "trap", msg: "unknown header kind 7"},
		{guest: "misuse", config: "i", phase: "request", want: runtime.ErrABI, outcome: "trap", msg: "CR, LF or NUL"},
		{guest: "misuse", config: "t", phase: "request", want: runtime.ErrABI, outcome: "trap", msg: "trailers are not supported"},
		{guest: "misuse", config: "l", phase: "request", want: runtime.ErrABI, outcome: "trap", msg: "unknown log level 9"},
		{guest: "misuse", config: "b", phase: "request", want: runtime.ErrABI, outcome: "trap", msg: "unknown body kind 5"},
		{guest: "misuse", config: "s", phase: "request", want: runtime.ErrABI, outcome: "trap", msg: "invalid status code 42"},
		{guest: "misuse", config: "r", phase: "response", want: runtime.ErrABI, outcome: "trap", msg: "after the next handler"},
		{guest: "misuse", config: "w", phase: "response", want: runtime.ErrABI, outcome: "trap", msg: "needs buffer_response"},
	}
	for _, tc := range tests {
		t.Run(tc.guest+tc.config, func(t *testing.T) {
			t.Parallel()
			ev := newEnv(t)
			// Only the looping guest should meet the deadline; the others
			// get one long enough for a loaded machine.
			timeout := 5 * time.Second
			if tc.want == runtime.ErrTimeout {
				timeout = 100 * time.Millisecond
			}
			opts := runtime.FilterOptions{
				PoolSize:    1,
				Config:      []byte(tc.config),
				Timeout:     timeout,
				MemoryLimit: 4 << 20,
			}
			f := ev.filter(t, tc.guest, opts)
			for i := range 2 { // the second request runs on the replacement
				x := filtertest.NewExchange("GET", "/")
				start := time.Now()
				_, err := roundTrip(f, x, nil)
				if !errors.Is(err, tc.want) {
					t.Fatalf("request %d: err = %v, want %v", i, err, tc.want)
				}
				if errors.Is(err, runtime.ErrABI) && !errors.Is(err, runtime.ErrTrap) {
					t.Errorf("ABI error not wrapped as a trap: %v", err)
				}
				prefix := fmt.Sprintf("filter %q: handle_%s: ", tc.guest, tc.phase)
				if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("err = %q, want prefix %q and %q", err, prefix, tc.msg)
				}
				if d := time.Since(start); d > 2*time.Second {
					t.Errorf("failure took %v", d)
				}
			}
			if !ev.obs.has(tc.guest + " " + tc.phase + " " + tc.outcome) {
				t.Errorf("observer calls = %v", ev.obs.calls)
			}
			if logs := ev.log.String(); !strings.Contains(logs, "filter="+tc.guest) || !strings.Contains(logs, "outcome="+tc.outcome) {
				t.Errorf("log lacks filter and outcome:\n%s", logs)
			}
			if s := f.Stats(); s.Errors != 2 {
				t.Errorf("errors = %d, want 2", s.Errors)
			}
			// The replacement settles to exactly one live instance.
			waitFor(t, func() bool { return f.Stats().Live == 1 })
		})
	}
}

// TestFilter_KeepsServing: a filter whose guest misbehaves only on some
// requests keeps serving the others.
func TestFilter_KeepsServing(t *testing.T) {
	ev := newEnv(t)
	bad := ev.filter(t, "loop", runtime.FilterOptions{PoolSize: 1, Timeout: 50 * time.Millisecond})
	good := ev.filter(t, "noop", runtime.FilterOptions{PoolSize: 1})
	for range 3 {
		if _, err := roundTrip(bad, filtertest.NewExchange("GET", "/"), nil); !errors.Is(err, runtime.ErrTimeout) {
			t.Fatalf("loop: %v", err)
		}
		if _, err := roundTrip(good, filtertest.NewExchange("GET", "/"), nil); err != nil {
			t.Fatalf("noop: %v", err)
		}
	}
}

// TestFilter_DeadlineWithoutWatcher: a guest that loops is stopped at its
// deadline and its instance replaced, both when wazero starts no
// goroutine per call (the compiler's loop checks and the instance's
// timer stop it; see RATIONALE.md) and when it does (a module with a
// start section keeps that goroutine). While the guest loops, the Go
// runtime can still stop the world for a GC.
func TestFilter_DeadlineWithoutWatcher(t *testing.T) {
	compiler := goruntime.GOARCH == "amd64" || goruntime.GOARCH == "arm64"
	tests := []struct {
		guest    string
		detached bool
	}{
		{guest: "loop", detached: compiler},
		{guest: "start_section", detached: false},
	}
	for _, tc := range tests {
		t.Run(tc.guest, func(t *testing.T) {
			ev := newEnv(t)
			const timeout = 500 * time.Millisecond
			f := ev.filter(t, tc.guest, runtime.FilterOptions{PoolSize: 1, Timeout: timeout})
			if got := runtime.Detached(f); got != tc.detached {
				t.Fatalf("detached = %v, want %v", got, tc.detached)
			}
			for i := range 2 { // the second request runs on the replacement
				start := time.Now()
				errc := make(chan error, 1)
				go func() { _, err := roundTrip(f, filtertest.NewExchange("GET", "/"), nil); errc <- err }()
				time.Sleep(timeout / 5)
				goruntime.GC()
				if d := time.Since(start); d >= timeout {
					t.Errorf("request %d: GC returned after %v, past the deadline", i, d)
				}
				err := <-errc
				d := time.Since(start)
				if !errors.Is(err, runtime.ErrTimeout) {
					t.Fatalf("request %d: err = %v, want ErrTimeout", i, err)
				}
				if d < timeout || d > timeout+2*time.Second {
					t.Errorf("request %d: stopped after %v, want about %v", i, d, timeout)
				}
			}
			if !ev.obs.has(tc.guest + " request timeout") {
				t.Errorf("observer calls = %v", ev.obs.calls)
			}
			waitFor(t, func() bool { return f.Stats().Live == 1 })
		})
	}
}

// TestEngine_StartLoop: a start function that never returns is stopped
// at InitTimeout, and the filter is refused.
func TestEngine_StartLoop(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	m, err := ev.e.Compile(ctx, guest(t, "start_loop"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	start := time.Now()
	_, err = ev.e.NewFilter(ctx, "slow", m, runtime.FilterOptions{PoolSize: 2, InitTimeout: 100 * time.Millisecond})
	if !errors.Is(err, runtime.ErrTimeout) || !strings.Contains(err.Error(), `filter "slow"`) || !strings.Contains(err.Error(), "_start") {
		t.Errorf("err = %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("refused after %v", d)
	}
}

func TestFilter_Overload(t *testing.T) {
	ev := newEnv(t)
	f := ev.filter(t, "loop", runtime.FilterOptions{PoolSize: 1, Timeout: 200 * time.Millisecond})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); f.HandleRequest(filtertest.NewExchange("GET", "/")) }()
	time.Sleep(20 * time.Millisecond) // let it take the only instance
	_, err := f.HandleRequest(filtertest.NewExchange("GET", "/"))
	wg.Wait()
	// Either the wait for an instance timed out, or the instance came
	// back (replaced) in time and then timed out itself.
	if !errors.Is(err, runtime.ErrOverload) && !errors.Is(err, runtime.ErrTimeout) {
		t.Fatalf("err = %v, want ErrOverload or ErrTimeout", err)
	}
}

func TestFilter_ResponseOnRetiredInstance(t *testing.T) {
	// misuse "r" traps in handle_response: the trap retires the instance
	// but leaves it open, so a second Call opened on it before still
	// gets its response phase there.
	ev := newEnv(t)
	f := ev.filter(t, "misuse", runtime.FilterOptions{PoolSize: 1, Config: []byte("r")})
	x1, x2 := filtertest.NewExchange("GET", "/"), filtertest.NewExchange("GET", "/")
	c1, err := f.HandleRequest(x1)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := f.HandleRequest(x2)
	if err != nil {
		t.Fatal(err)
	}
	if err := c1.HandleResponse(x1, false); !errors.Is(err, runtime.ErrTrap) {
		t.Fatalf("c1: %v", err)
	}
	if err := c2.HandleResponse(x2, false); !errors.Is(err, runtime.ErrTrap) {
		t.Fatalf("c2: %v", err)
	}
	waitFor(t, func() bool { return f.Stats().Live == 1 })
}

func TestFilter_ResponseAfterInstanceTimedOut(t *testing.T) {
	// Calls whose handle_request ran on an instance that another request
	// then made time out still get their handle_response there, with the
	// state they left in it (the echo of their x-id), and only the
	// looping request fails; the instance is closed after the last one.
	// A fresh request goes to the replacement, never to the retired one.
	ev := newEnv(t)
	f := ev.filter(t, "reqctx_loop", runtime.FilterOptions{PoolSize: 1, Timeout: 50 * time.Millisecond})
	var xs []*filtertest.Exchange
	var calls []*runtime.Call
	for _, id := range []string{"a", "b"} {
		x := filtertest.NewExchange("GET", "/", "x-id", id)
		c, err := f.HandleRequest(x)
		if err != nil || c == nil {
			t.Fatal(c, err)
		}
		xs, calls = append(xs, x), append(calls, c)
	}
	if _, err := f.HandleRequest(filtertest.NewExchange("GET", "/", "x-loop", "1")); !errors.Is(err, runtime.ErrTimeout) {
		t.Fatalf("looping request: %v", err)
	}
	for i, c := range calls {
		if err := c.HandleResponse(xs[i], false); err != nil {
			t.Fatalf("call %d: HandleResponse = %v, want nil: another request's timeout failed it", i, err)
		}
		if got, want := xs[i].RespHeader("x-id-echo"), []string{"a", "b"}[i]; got != want {
			t.Errorf("call %d: x-id-echo = %q, want %q: its state was lost", i, got, want)
		}
	}
	waitFor(t, func() bool { return f.Stats().Live == 1 })
	x := filtertest.NewExchange("GET", "/", "x-id", "c")
	if _, err := roundTrip(f, x, nil); err != nil || x.RespHeader("x-id-echo") != "c" { // the replacement serves
		t.Fatal(err, x.RespHeader("x-id-echo"))
	}
	if _, err := f.HandleRequest(filtertest.NewExchange("GET", "/", "x-loop", "1")); !errors.Is(err, runtime.ErrTimeout) {
		t.Fatalf("second looping request: %v", err)
	}
}

func TestFilter_ResumedInstanceDeadline(t *testing.T) {
	// A response phase that loops on an instance another request's
	// timeout already interrupted (and resume put back) is stopped at its
	// own deadline too: resume leaves the instance's deadline as new. The
	// request after it on the same instance still gets its echo.
	ev := newEnv(t)
	f := ev.filter(t, "reqctx_loop", runtime.FilterOptions{PoolSize: 1, Timeout: 50 * time.Millisecond})
	xLoop := filtertest.NewExchange("GET", "/", "x-id", "a", "x-loop-response", "1")
	xOK := filtertest.NewExchange("GET", "/", "x-id", "b")
	cLoop, err := f.HandleRequest(xLoop)
	if err != nil || cLoop == nil {
		t.Fatal(cLoop, err)
	}
	cOK, err := f.HandleRequest(xOK)
	if err != nil || cOK == nil {
		t.Fatal(cOK, err)
	}
	if _, err := f.HandleRequest(filtertest.NewExchange("GET", "/", "x-loop", "1")); !errors.Is(err, runtime.ErrTimeout) {
		t.Fatalf("looping request: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cLoop.HandleResponse(xLoop, false) }()
	select {
	case err := <-done:
		if !errors.Is(err, runtime.ErrTimeout) {
			t.Fatalf("looping response phase on the resumed instance: %v, want ErrTimeout", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("looping response phase on the resumed instance not stopped: its deadline did not fire")
	}
	if err := cOK.HandleResponse(xOK, false); err != nil || xOK.RespHeader("x-id-echo") != "b" {
		t.Fatalf("the last request on the instance: %v, echo %q; want nil, b", err, xOK.RespHeader("x-id-echo"))
	}
	waitFor(t, func() bool { return f.Stats().Live == 1 })
}

func TestEngine_CompileErrors(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	tests := []struct {
		name string
		wasm []byte
		msg  string
	}{
		{"not wasm", []byte("hello"), "compile sha256:"},
		{"no exports", []byte("\x00asm\x01\x00\x00\x00"), "does not export function handle_request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ev.e.Compile(ctx, tc.wasm)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want %q", err, tc.msg)
			}
		})
	}
	// The same bytes compile to the same Module.
	a, err := ev.e.Compile(ctx, guest(t, "noop"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ev.e.Compile(ctx, guest(t, "noop"))
	if a != b {
		t.Error("same bytes compiled twice")
	}
	a.Close(ctx)
	b.Close(ctx)
}

func TestEngine_StartTrap(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	m, err := ev.e.Compile(ctx, guest(t, "start_trap"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	_, err = ev.e.NewFilter(ctx, "bad", m, runtime.FilterOptions{PoolSize: 2})
	if err == nil || !strings.Contains(err.Error(), `filter "bad"`) || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("err = %v", err)
	}
}

func TestFilter_MemoryLimitBelowMinimum(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	m, err := ev.e.Compile(ctx, guest(t, "misuse")) // 2 pages at start
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	_, err = ev.e.NewFilter(ctx, "small", m, runtime.FilterOptions{PoolSize: 1, MemoryLimit: 1})
	if err == nil || !strings.Contains(err.Error(), "over the memory limit") {
		t.Errorf("err = %v", err)
	}
}

func TestFilter_Closed(t *testing.T) {
	ev := newEnv(t)
	f := ev.filter(t, "noop", runtime.FilterOptions{PoolSize: 1})
	c, err := f.HandleRequest(filtertest.NewExchange("GET", "/"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	// The open Call keeps the pool alive: Close waits, then gives up.
	if err := f.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close = %v, want deadline", err)
	}
	if _, err := f.HandleRequest(filtertest.NewExchange("GET", "/")); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	// Finishing the Call closes the last instance.
	if err := c.HandleResponse(filtertest.NewExchange("GET", "/"), false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return f.Stats().Live == 0 })
}

func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFilter_TrailersReadEmpty: trailer names and values read as empty
// and removing one is a no-op (setting one traps: see TestFilter_Isolation).
func TestFilter_TrailersReadEmpty(t *testing.T) {
	ev := newEnv(t)
	f := ev.filter(t, "misuse", runtime.FilterOptions{PoolSize: 1, Config: []byte("T")})
	if _, err := roundTrip(f, filtertest.NewExchange("GET", "/", "Trailer", "x-misuse"), nil); err != nil {
		t.Fatal(err)
	}
}

func TestEngine_DiskCache(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	for i := range 2 { // the second engine loads what the first stored
		e, err := runtime.NewEngine(ctx, runtime.EngineOptions{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		m, err := e.Compile(ctx, guest(t, "reqctx"))
		if err != nil {
			t.Fatal(err)
		}
		f, err := e.NewFilter(ctx, "cached", m, runtime.FilterOptions{PoolSize: 1})
		if err != nil {
			t.Fatalf("engine %d: %v", i, err)
		}
		f.Close(ctx)
		m.Close(ctx)
		e.Close(ctx)
	}
	var files int
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, _ error) error {
		if d != nil && !d.IsDir() {
			files++
		}
		return nil
	})
	if files == 0 {
		t.Error("nothing stored in the compilation cache")
	}
}
