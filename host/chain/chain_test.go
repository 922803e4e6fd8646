package chain_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/chain"
	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/runtime"
)

// The chain's cases run through every engine (exchangetest.Engines) with
// real guests: a shipped filter or a test guest of runtime/testdata.

// TestChain_FailedInvocationHeaders: a filter invocation that fails
// leaves none of its response header changes behind; the error is
// rendered on the response as it was before the invocation. The shipped
// headers filter, in handle_response, removes X-Upstream, sets X-Crash,
// then sets a field with an invalid name, which traps.
func TestChain_FailedInvocationHeaders(t *testing.T) {
	ctx := context.Background()
	e, err := runtime.NewEngine(ctx, runtime.EngineOptions{CacheDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(ctx) })
	wasm, err := os.ReadFile("../../filters/headers/headers.wasm")
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.Compile(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	f, err := e.NewFilter(ctx, "headers", m, runtime.FilterOptions{
		Config:   []byte(`{"response": {"remove": ["X-Upstream"], "set": {"X-Crash": "set", "bad name": "x"}}}`),
		PoolSize: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close(ctx) })
	next := exchange.HandlerFunc(func(x exchange.Exchange) error {
		x.SetResponseHeader("X-Upstream", "yes")
		x.AddResponseHeader("X-Upstream", "twice")
		x.SetBody([]byte("from upstream\n"))
		return nil
	})
	for _, en := range exchangetest.Engines(t, chain.New([]chain.Filter{f}, next)) {
		t.Run(en.Name, func(t *testing.T) {
			resp, err := en.Client.Get(en.URL + "/")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusInternalServerError || string(body) != "filter failed\n" {
				t.Fatalf("got %d %q, want 500 from the trap", resp.StatusCode, body)
			}
			if got := resp.Header.Values("X-Crash"); len(got) != 0 {
				t.Errorf("X-Crash = %q: the failed invocation's header was kept", got)
			}
			if got := resp.Header.Values("X-Upstream"); len(got) != 2 || got[0] != "yes" || got[1] != "twice" {
				t.Errorf("X-Upstream = %q, want [yes twice]: the failed invocation's removal was kept", got)
			}
		})
	}
}

// TestChain_TimeoutSparesOtherRequests: a request that makes a filter
// time out fails alone. Two attackers loop on requests that make the
// guest (runtime/testdata/reqctx_loop) run past its timeout, against a
// pool of 2, while a normal client's requests, each of which needs its
// handle_response on the instance that ran its handle_request (the
// guest echoes the x-id it kept there), wait in the next handler: the
// client never gets a 500, and every answer it gets is its own echo
// (a 503 would be the overload of a busy pool, not a failure). Before,
// the attacker's timeout closed the instance and the client's response
// phase failed with ErrInstanceGone: 500.
func TestChain_TimeoutSparesOtherRequests(t *testing.T) {
	ctx := context.Background()
	e, err := runtime.NewEngine(ctx, runtime.EngineOptions{CacheDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(ctx) })
	wasm, err := os.ReadFile("../../runtime/testdata/reqctx_loop.wasm")
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.Compile(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	f, err := e.NewFilter(ctx, "loop", m, runtime.FilterOptions{PoolSize: 2, Timeout: 40 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close(ctx) })
	// The next handler waits long enough for an attacker to take the
	// instance that ran the client's handle_request.
	next := exchange.HandlerFunc(func(x exchange.Exchange) error {
		if x.RequestHeader("x-loop") == nil {
			time.Sleep(15 * time.Millisecond)
		}
		x.SetBody([]byte("ok"))
		return nil
	})
	for _, en := range exchangetest.Engines(t, chain.New([]chain.Filter{f}, next)) {
		t.Run(en.Name, func(t *testing.T) {
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						req, _ := http.NewRequest("GET", en.URL+"/", nil)
						req.Header.Set("X-Loop", "1")
						if resp, err := en.Client.Do(req); err == nil {
							io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
						}
					}
				})
			}
			defer wg.Wait()
			defer close(stop)
			var ok, busy int
			for i := range 12 {
				id := strconv.Itoa(i)
				req, _ := http.NewRequest("GET", en.URL+"/", nil)
				req.Header.Set("X-Id", id)
				resp, err := en.Client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode == http.StatusOK && resp.Header.Get("X-Id-Echo") == id:
					ok++
				case resp.StatusCode == http.StatusServiceUnavailable:
					busy++
				default:
					t.Errorf("request %d: %d, x-id-echo %q: want 200 with its own echo", i, resp.StatusCode, resp.Header.Get("X-Id-Echo"))
				}
			}
			if ok == 0 {
				t.Errorf("no request served (%d answered 503)", busy)
			}
		})
	}
}

// TestChain_SlowBodiesHoldNoInstance: sixteen clients trickle request
// bodies to a filter that reads them (buffer_request) with a pool of two
// instances. The host reads a body before the request takes an instance
// (bounded by max_buffer and the body timeout), so the slow clients hold
// buffers, not instances: a normal client beside them is served at once,
// never 503, and each slow one gets 408 at its body timeout. Before,
// each slow body was read inside the guest's call: two trickling clients
// held both instances and the normal client's requests waited for one
// until the filter's timeout (503). Issue 21, finding 7.
func TestChain_SlowBodiesHoldNoInstance(t *testing.T) {
	ctx := context.Background()
	e, err := runtime.NewEngine(ctx, runtime.EngineOptions{CacheDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(ctx) })
	wasm, err := os.ReadFile("../../runtime/testdata/body.wasm")
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.Compile(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	const timeout, bodyTimeout = 150 * time.Millisecond, 700 * time.Millisecond
	f, err := e.NewFilter(ctx, "body", m, runtime.FilterOptions{PoolSize: 2, Timeout: timeout, BodyTimeout: bodyTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close(ctx) })
	next := exchange.HandlerFunc(func(x exchange.Exchange) error {
		b, err := io.ReadAll(io.LimitReader(x.RequestBody(), 1<<10))
		if err != nil {
			return err
		}
		x.SetBody(b)
		return nil
	})
	for _, en := range exchangetest.Engines(t, chain.New([]chain.Filter{f}, next)) {
		t.Run(en.Name, func(t *testing.T) {
			const slowClients = 16
			var wg sync.WaitGroup
			slow := make([]int, slowClients)
			for i := range slow {
				wg.Go(func() {
					// A byte every 100ms, more than the body timeout allows.
					req, _ := http.NewRequest("POST", en.URL+"/", &slowReader{n: 20, every: 100 * time.Millisecond})
					req.ContentLength = -1
					resp, err := en.Client.Do(req)
					if err != nil {
						return // the engine may reset a stream it gave up on
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					slow[i] = resp.StatusCode
				})
			}
			time.Sleep(50 * time.Millisecond) // the slow clients are sending
			var codes []int
			var worst time.Duration
			for range 8 {
				start := time.Now()
				resp, err := en.Client.Post(en.URL+"/", "text/plain", strings.NewReader("hi"))
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				worst = max(worst, time.Since(start))
				codes = append(codes, resp.StatusCode)
				if resp.StatusCode != 200 || !strings.HasPrefix(string(b), "wrapped:hi") {
					t.Errorf("normal request: %d %q, want 200 wrapped:hi", resp.StatusCode, b)
				}
				time.Sleep(30 * time.Millisecond)
			}
			wg.Wait()
			if worst >= timeout {
				t.Errorf("a normal request took %s, as long as the wait for an instance (%s): %v", worst, timeout, codes)
			}
			for i, code := range slow {
				if code != 0 && code != http.StatusRequestTimeout {
					t.Errorf("slow client %d: %d, want 408", i, code)
				}
			}
		})
	}
}

// slowReader yields one byte every every, n in all.
type slowReader struct {
	n     int
	every time.Duration
}

func (r *slowReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	time.Sleep(r.every)
	r.n--
	p[0] = 'a'
	return 1, nil
}

// TestChain_FilterErrorStatus: each way a filter fails maps to the status
// the client sees, and the error keeps the cause.
func TestChain_FilterErrorStatus(t *testing.T) {
	next := exchange.HandlerFunc(func(x exchange.Exchange) error { return nil })
	for _, c := range []struct {
		err    error
		status int
	}{
		{runtime.ErrTrap, 500},
		{runtime.ErrMemory, 500},
		{runtime.ErrTimeout, 503},
		{runtime.ErrOverload, 503},
		{runtime.ErrInstanceGone, 503}, // another request's timeout: not this client's doing
		{runtime.ErrRequestBodyTooLarge, 413},
		{runtime.ErrRequestBodyTimeout, 408},
		{runtime.ErrResponseBodyTooLarge, 502},
		{runtime.ErrResponseBodyTimeout, 504},
		{&exchange.Error{Status: 413, Message: "too big"}, 413},
	} {
		h := chain.New([]chain.Filter{failFilter{fmt.Errorf("filter %q: handle_request: %w", "f", c.err)}}, next)
		err := h.ServeExchange(nil)
		var xe *exchange.Error
		if !errors.As(err, &xe) || xe.Status != c.status || !errors.Is(err, c.err) {
			t.Errorf("%v: %v, want status %d wrapping it", c.err, err, c.status)
		}
	}
}

// failFilter fails every request with err.
type failFilter struct{ err error }

func (f failFilter) Request(runtime.HTTP) (runtime.Call, error) { return runtime.Call{}, f.err }
