package host

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
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

// TestFilterFailedInvocationHeaders: a filter invocation that fails
// leaves none of its response header changes behind; the error is
// rendered on the response as it was before the invocation. The shipped
// headers filter, in handle_response, removes X-Upstream, sets X-Crash,
// then sets a field with an invalid name, which traps.
func TestFilterFailedInvocationHeaders(t *testing.T) {
	ctx := context.Background()
	e, err := runtime.NewEngine(ctx, runtime.EngineOptions{CacheDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(ctx) })
	wasm, err := os.ReadFile("../filters/headers/headers.wasm")
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

// TestStartFilterSetupError: a filter whose setup rejects its config fails
// Start (and so `sluice serve`) with the guest's message as the error,
// the filter named once, and nothing of the guest logged besides.
func TestStartFilterSetupError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sluice.hcl")
	src := fmt.Sprintf(`
filter "api-key" {
  module = %q
  config = { keys = ["k1"], header = 42 }
  pool {
    size = 4
  }
}
site "*" {
  listen = ["127.0.0.1:%d"]
  route "/" {
    filters = ["api-key"]
    respond {}
  }
}
`, guestModule(t, "../filters/keyauth/keyauth.wasm"), freePort(t))
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	inst, err := Start(InstanceOptions{Path: path, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err == nil {
		inst.Shutdown(context.Background())
		t.Fatal("Start succeeded")
	}
	want := `filter "api-key": filter setup: header must be a string` + "\n\t_initialize failed: wasm trap: wasm error: unreachable"
	if err.Error() != want {
		t.Errorf("error:\n%s\nwant:\n%s", err, want)
	}
	if strings.Contains(logs.String(), "source=") {
		t.Errorf("the guest's output was logged besides:\n%s", logs.String())
	}
}

// TestFilterTimeoutSparesOtherRequests: a request that makes a filter
// time out fails alone. Two attackers loop on requests that make the
// guest (runtime/testdata/reqctx_loop) run past its timeout, against a
// pool of 2, while a normal client's requests, each of which needs its
// handle_response on the instance that ran its handle_request (the
// guest echoes the x-id it kept there), wait in the next handler: the
// client never gets a 500, and every answer it gets is its own echo
// (a 503 would be the overload of a busy pool, not a failure). Before,
// the attacker's timeout closed the instance and the client's response
// phase failed with ErrInstanceGone: 500.
func TestFilterTimeoutSparesOtherRequests(t *testing.T) {
	ctx := context.Background()
	e, err := runtime.NewEngine(ctx, runtime.EngineOptions{CacheDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(ctx) })
	wasm, err := os.ReadFile("../runtime/testdata/reqctx_loop.wasm")
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
