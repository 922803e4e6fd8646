package loopcheck_test

import (
	"context"
	"errors"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/sluicehq/sluice/runtime/internal/loopcheck"
)

// countdown is (module (func (export "loop") (param i32)
// (loop (br_if 0 (local.tee 0 (i32.sub (local.get 0) (i32.const 1))))))):
// its loop head runs n times for n > 0.
var countdown = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
	0x01, 0x05, 0x01, 0x60, 0x01, 0x7f, 0x00, // type: (func (param i32))
	0x03, 0x02, 0x01, 0x00, // func 0: type 0
	0x07, 0x08, 0x01, 0x04, 'l', 'o', 'o', 'p', 0x00, 0x00, // export "loop"
	0x0a, 0x10, 0x01, 0x0e, 0x00, // code: one body, no locals
	0x03, 0x40, 0x20, 0x00, 0x41, 0x01, 0x6b, 0x22, 0x00, 0x0d, 0x00, 0x0b, 0x0b,
}

func thinned(t *testing.T) wazero.Runtime {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(true))
	t.Cleanup(func() { rt.Close(ctx) })
	if !loopcheck.Thin(rt) {
		if goruntime.GOOS == "linux" && goruntime.GOARCH == "amd64" {
			t.Fatal("Thin found no check trampoline: wazero's fields changed")
		}
		t.Skip("no stub on this platform")
	}
	return rt
}

func loopFunc(t *testing.T, rt wazero.Runtime) api.Function {
	t.Helper()
	mod, err := rt.Instantiate(context.Background(), countdown)
	if err != nil {
		t.Fatal(err)
	}
	return mod.ExportedFunction("loop")
}

// TestThin_Counts: each loop iteration counts the call's counter down
// once, and the counter starts over at Every when it runs out (where the
// stub exits to Go); each function of each instance counts on its own.
func TestThin_Counts(t *testing.T) {
	rt := thinned(t)
	ctx := context.Background()
	fn, other := loopFunc(t, rt), loopFunc(t, rt)
	if got := loopcheck.Left(fn); got != loopcheck.Every {
		t.Fatalf("left before any call = %d, want %d", got, loopcheck.Every)
	}
	steps := []struct {
		n    uint64
		left int64
	}{
		{100, loopcheck.Every - 100},
		{loopcheck.Every - 100 + 7, loopcheck.Every - 7}, // runs out, starts over, 7 more
		{10*loopcheck.Every + 3, loopcheck.Every - 10},
	}
	for _, s := range steps {
		if _, err := fn.Call(ctx, s.n); err != nil {
			t.Fatal(err)
		}
		if got := loopcheck.Left(fn); got != s.left {
			t.Fatalf("left after %d more iterations = %d, want %d", s.n, got, s.left)
		}
	}
	if got := loopcheck.Left(other); got != loopcheck.Every {
		t.Errorf("another instance's counter = %d, want %d", got, loopcheck.Every)
	}
}

// TestThin_StillStops: a guest looping for billions of iterations is
// stopped when its context is done, through the checks that still exit.
func TestThin_StillStops(t *testing.T) {
	fn := loopFunc(t, thinned(t))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := fn.Call(ctx, 0) // 0 - 1 wraps: 2^32 iterations
	var exit *sys.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != sys.ExitCodeDeadlineExceeded {
		t.Fatalf("err = %v, want the deadline's exit", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stopped after %v", d)
	}
}

// TestThin_RefusesThreads: a runtime with the threads feature could call
// the trampoline whose slot holds the counters; it is left alone.
func TestThin_RefusesThreads(t *testing.T) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCoreFeatures(api.CoreFeaturesV2|experimental.CoreFeaturesThreads))
	defer rt.Close(ctx)
	if loopcheck.Thin(rt) {
		t.Error("Thin took a runtime with threads")
	}
}

// BenchmarkLoop: one loop iteration of a guest compiled with loop checks,
// each check leaving for Go (wazero's) or counting down in the stub.
func BenchmarkLoop(b *testing.B) {
	for _, thin := range []bool{false, true} {
		name := map[bool]string{false: "wazero", true: "stub"}[thin]
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(true))
			defer rt.Close(ctx)
			if thin && !loopcheck.Thin(rt) {
				b.Skip("no stub on this platform")
			}
			mod, err := rt.Instantiate(ctx, countdown)
			if err != nil {
				b.Fatal(err)
			}
			fn := mod.ExportedFunction("loop")
			const n = 1 << 16
			b.ResetTimer()
			for range b.N {
				if _, err := fn.Call(ctx, n); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/iteration")
		})
	}
}
