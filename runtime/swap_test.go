package runtime_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/filtertest"
)

// versioned returns the version guest answering "x-version: v" + n.
func versioned(t testing.TB, n int) []byte {
	t.Helper()
	b := guest(t, "version")
	v := []byte(fmt.Sprintf("v%03d", n))
	if bytes.Count(b, []byte("v000")) != 1 {
		t.Fatal("version.wasm: marker v000 not found once")
	}
	return bytes.Replace(b, []byte("v000"), v, 1)
}

func version(t testing.TB, f *runtime.Filter) (string, error) {
	x := filtertest.NewExchange("GET", "/")
	if _, err := roundTrip(f, x, nil); err != nil {
		return "", err
	}
	return string(x.ResponseHeader("x-version")), nil
}

// TestSwap_Hammer swaps the module 20 times under concurrent load: no
// request fails, each swap's behaviour is seen right after it, and live
// instances settle back to the pool size.
func TestSwap_Hammer(t *testing.T) {
	ev := newEnv(t)
	const poolSize = 2
	f := ev.filterBytes(t, "version", versioned(t, 0), runtime.FilterOptions{PoolSize: poolSize})
	ctx := context.Background()

	var stop atomic.Bool
	var requests, failures, maxLive atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20000 && !stop.Load(); i++ {
				v, err := version(t, f)
				requests.Add(1)
				if err != nil || !strings.HasPrefix(v, "v") {
					failures.Add(1)
					t.Errorf("request failed: %q %v", v, err)
				}
				if l := int64(f.Stats().Live); l > maxLive.Load() {
					maxLive.Store(l)
				}
			}
		}()
	}
	deadline := time.After(20 * time.Second)
	for n := 1; n <= 20; n++ {
		m, err := ev.e.Compile(ctx, versioned(t, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Swap(ctx, m); err != nil {
			t.Fatal(err)
		}
		m.Close(ctx)
		if v, err := version(t, f); err != nil || v != fmt.Sprintf("v%03d", n) {
			t.Fatalf("after swap %d: %q, %v", n, v, err)
		}
		select {
		case <-deadline:
			t.Fatal("swaps took too long")
		default:
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d requests during 20 swaps, max live instances %d", requests.Load(), maxLive.Load())
	if failures.Load() != 0 {
		t.Fatalf("%d failed requests", failures.Load())
	}
	waitFor(t, func() bool { return f.Stats().Live == poolSize })
	if s := f.Stats(); s.Swaps != 20 || s.LastSwap.IsZero() {
		t.Errorf("stats = %+v", s)
	}
	// While swapping, each request in flight can pin at most one old
	// generation: live <= pool * (1 current + 8 workers), and back to
	// pool size once drained (checked above).
	if maxLive.Load() > poolSize*(1+8) {
		t.Errorf("max live instances %d with pool size %d", maxLive.Load(), poolSize)
	}
}

func TestSwap_FailingModuleKeepsOld(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	f := ev.filterBytes(t, "version", versioned(t, 1), runtime.FilterOptions{PoolSize: 1})

	// Does not compile: nothing to swap to, old one serves.
	if _, err := ev.e.Compile(ctx, []byte("\x00asm garbage")); err == nil {
		t.Fatal("garbage compiled")
	}
	// Compiles but can't start: Swap fails, old one serves.
	m, err := ev.e.Compile(ctx, guest(t, "start_trap"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	if err := f.Swap(ctx, m); err == nil || !strings.Contains(err.Error(), "swap to sha256:") {
		t.Fatalf("Swap = %v", err)
	}
	if v, err := version(t, f); v != "v001" || err != nil {
		t.Errorf("after failed swap: %q %v", v, err)
	}
	if s := f.Stats(); s.SwapErrors != 1 || s.Live != 1 {
		t.Errorf("stats = %+v", s)
	}
	if !strings.Contains(ev.log.String(), "previous module keeps serving") {
		t.Error("failed swap not logged")
	}
}

// TestSwap_InFlightCallFinishesOnOld: a Call opened before a swap runs
// its handle_response on the old module's instance.
func TestSwap_InFlightCallFinishesOnOld(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	f := ev.filter(t, "reqctx", runtime.FilterOptions{PoolSize: 1})
	x := filtertest.NewExchange("GET", "/", "x-id", "before-swap")
	c, err := f.HandleRequest(x)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := ev.e.Compile(ctx, guest(t, "noop"))
	defer m.Close(ctx)
	if err := f.Swap(ctx, m); err != nil {
		t.Fatal(err)
	}
	if s := f.Stats(); s.Live != 2 {
		t.Errorf("live during drain = %d, want 2", s.Live)
	}
	if err := c.HandleResponse(x, false); err != nil {
		t.Fatal(err)
	}
	if got := string(x.ResponseHeader("x-id-echo")); got != "before-swap" {
		t.Errorf("echo = %q", got)
	}
	waitFor(t, func() bool { return f.Stats().Live == 1 })
}

func writeAtomic(t testing.TB, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestWatch(t *testing.T) {
	ev := newEnv(t)
	path := filepath.Join(t.TempDir(), "filter.wasm")
	writeAtomic(t, path, versioned(t, 1))
	b, _ := os.ReadFile(path)
	f := ev.filterBytes(t, "version", b, runtime.FilterOptions{PoolSize: 1})
	stop, err := f.Watch(path)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	writeAtomic(t, path, versioned(t, 2)) // rename over: what deploy tools do
	waitFor(t, func() bool { v, _ := version(t, f); return v == "v002" })

	if err := os.WriteFile(path, versioned(t, 3), 0o644); err != nil { // in place
		t.Fatal(err)
	}
	waitFor(t, func() bool { v, _ := version(t, f); return v == "v003" })

	writeAtomic(t, path, []byte("not wasm"))
	waitFor(t, func() bool { return strings.Contains(ev.log.String(), "compile failed") })
	if v, err := version(t, f); v != "v003" || err != nil {
		t.Errorf("after bad file: %q %v", v, err)
	}
}
