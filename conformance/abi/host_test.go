package abi_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	wasm "github.com/http-wasm/http-wasm-host-go/handler/nethttp"

	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/runtime"
)

func do(t *testing.T, c *http.Client, method, url, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestResponsePhase_Buffering: the guest reads the request body (the next
// handler still gets all of it) and rewrites the response body in
// handle_response, on every engine.
func TestResponsePhase_Buffering(t *testing.T) {
	e := newEngine(t)
	f := newFilter(t, e, "body", sluiceGuest(t, "body"), runtime.FilterOptions{})
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Guest-Body", r.Header.Get("X-Guest-Body"))
		w.Write([]byte("upstream got " + string(b)))
	})
	body := strings.Repeat("0123456789", 500) // several read_body calls
	for _, eng := range exchangetest.Engines(t, filterHandler(f, next)) {
		t.Run(eng.Name, func(t *testing.T) {
			resp, got := do(t, eng.Client, "POST", eng.URL+"/", body)
			if resp.StatusCode != 200 || got != "wrapped:upstream got "+body {
				t.Errorf("%d %q", resp.StatusCode, got)
			}
			if resp.Header.Get("X-Guest-Body") != body {
				t.Errorf("guest read %d bytes", len(resp.Header.Get("X-Guest-Body")))
			}
			if resp.Proto != eng.Proto {
				t.Errorf("proto %s", resp.Proto)
			}
		})
	}
}

// TestResponsePhase_SameInstance: concurrent requests over loopback each
// get their own request's state back in handle_response.
func TestResponsePhase_SameInstance(t *testing.T) {
	e := newEngine(t)
	f := newFilter(t, e, "reqctx", sluiceGuest(t, "reqctx"), runtime.FilterOptions{PoolSize: 2})
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Millisecond) // overlap requests
	})
	for _, eng := range exchangetest.Engines(t, filterHandler(f, next)) {
		t.Run(eng.Name, func(t *testing.T) {
			var wg sync.WaitGroup
			for i := range 40 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					id := eng.Name + "-" + string(rune('a'+i%26)) + strings.Repeat("x", i%7)
					req, _ := http.NewRequest("GET", eng.URL+"/", nil)
					req.Header.Set("X-Id", id)
					resp, err := eng.Client.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
					if got := resp.Header.Get("X-Id-Echo"); got != id {
						t.Errorf("echo %q, want %q", got, id)
					}
				}()
			}
			wg.Wait()
		})
	}
}

// TestTrailers: this host grants no trailers. enable_features leaves the
// bit off; trailer names and values read as empty (checked in the
// runtime's unit tests); setting a trailer traps and the request fails
// with 500, alone.
func TestTrailers(t *testing.T) {
	e := newEngine(t)
	f := newFilter(t, e, "body", sluiceGuest(t, "body"), runtime.FilterOptions{PoolSize: 1})
	if f.Features()&runtime.FeatureTrailers != 0 {
		t.Error("trailers granted")
	}
	bad := newFilter(t, e, "trailer", sluiceGuest(t, "misuse"), runtime.FilterOptions{PoolSize: 1, Config: []byte("t")})
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for _, eng := range exchangetest.Engines(t, filterHandler(bad, ok)) {
		resp, _ := do(t, eng.Client, "GET", eng.URL+"/", "")
		if resp.StatusCode != 500 {
			t.Errorf("%s: status %d, want 500", eng.Name, resp.StatusCode)
		}
	}
}

// TestErrorGuests: the reference host's error guests fail the same way
// here, as errors the host turns into 5xx, never as a crash.
func TestErrorGuests(t *testing.T) {
	dir := referenceDir(t)
	e := newEngine(t)
	ctx := context.Background()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, "internal/test/testdata/error", name+".wasm"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	// panic_on_start: neither host can start it.
	m, err := e.Compile(ctx, read("panic_on_start"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.NewFilter(ctx, "start", m, runtime.FilterOptions{PoolSize: 1}); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("panic_on_start: %v", err)
	}
	m.Close(ctx)
	if _, err := wasm.NewMiddleware(ctx, read("panic_on_start")); err == nil {
		t.Error("reference started panic_on_start")
	}

	// Response-phase failures: a trap, and an ABI violation.
	for name, want := range map[string]error{
		"panic_on_handle_response":      runtime.ErrTrap,
		"set_request_header_after_next": runtime.ErrABI,
	} {
		f := newFilter(t, e, name, read(name), runtime.FilterOptions{PoolSize: 1})
		var got atomic.Value
		h := filterHandler(f, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		for _, eng := range exchangetest.Engines(t, hookErr(h, &got)) {
			resp, _ := do(t, eng.Client, "GET", eng.URL+"/", "")
			if resp.StatusCode != 500 {
				t.Errorf("%s on %s: status %d", name, eng.Name, resp.StatusCode)
			}
			if err, _ := got.Load().(error); !errors.Is(err, want) {
				t.Errorf("%s on %s: err %v, want %v", name, eng.Name, err, want)
			}
		}
	}
}

// TestPool_Hammer_Loopback: 500 requests held open over loopback (their
// next handler waits) use no more than PoolSize instances.
func TestPool_Hammer_Loopback(t *testing.T) {
	const n, poolSize = 500, 2
	e := newEngine(t)
	f := newFilter(t, e, "noop", sluiceGuest(t, "noop"), runtime.FilterOptions{PoolSize: poolSize, Timeout: 10 * time.Second})
	release := make(chan struct{})
	var arrived sync.WaitGroup
	arrived.Add(n)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		<-release
	})
	eng := exchangetest.Engines(t, filterHandler(f, next))[0] // fasthttp: one connection per request
	var failed atomic.Int64
	var done sync.WaitGroup
	for range n {
		done.Add(1)
		go func() {
			defer done.Done()
			resp, err := eng.Client.Get(eng.URL + "/")
			if err != nil {
				failed.Add(1)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				failed.Add(1)
			}
		}()
	}
	arrived.Wait()
	live := f.Stats().Live
	close(release)
	done.Wait()
	t.Logf("%d requests waiting upstream over loopback: %d live instances (pool %d)", n, live, poolSize)
	if live > poolSize {
		t.Errorf("live = %d, want <= %d", live, poolSize)
	}
	if failed.Load() != 0 {
		t.Errorf("%d requests failed", failed.Load())
	}
}
