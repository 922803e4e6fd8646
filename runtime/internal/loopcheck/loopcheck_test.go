package loopcheck_test

import (
	"context"
	"errors"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
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

func setup(t *testing.T) (*loopcheck.Stub, func(ctx context.Context, n uint32) error) {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(true))
	t.Cleanup(func() { rt.Close(ctx) })
	s := loopcheck.Thin(rt)
	if s == nil {
		if goruntime.GOOS == "linux" && goruntime.GOARCH == "amd64" {
			t.Fatal("Thin found no check trampoline: wazero's fields changed")
		}
		t.Skip("no stub on this platform")
	}
	mod, err := rt.Instantiate(ctx, countdown)
	if err != nil {
		t.Fatal(err)
	}
	fn := mod.ExportedFunction("loop")
	return s, func(ctx context.Context, n uint32) error {
		_, err := fn.Call(ctx, uint64(n))
		return err
	}
}

// TestThin_Counts: each loop iteration counts down once, and the counter
// starts over at Every when it runs out (where the stub exits to Go).
func TestThin_Counts(t *testing.T) {
	s, loop := setup(t)
	ctx := context.Background()
	if got := s.Left(); got != loopcheck.Every {
		t.Fatalf("left before any call = %d, want %d", got, loopcheck.Every)
	}
	if err := loop(ctx, 100); err != nil {
		t.Fatal(err)
	}
	if got := s.Left(); got != loopcheck.Every-100 {
		t.Fatalf("left after 100 iterations = %d, want %d", got, loopcheck.Every-100)
	}
	// Every-100 more run it out: the check exits and starts over, then
	// 7 more.
	if err := loop(ctx, loopcheck.Every-100+7); err != nil {
		t.Fatal(err)
	}
	if got := s.Left(); got != loopcheck.Every-7 {
		t.Fatalf("left after running out = %d, want %d", got, loopcheck.Every-7)
	}
	if err := loop(ctx, 10*loopcheck.Every+3); err != nil {
		t.Fatal(err)
	}
	if got := s.Left(); got != loopcheck.Every-10 {
		t.Fatalf("left after ten rounds = %d, want %d", got, loopcheck.Every-10)
	}
}

// TestThin_StillStops: a guest looping for billions of iterations is
// stopped when its context is done, through the checks that still exit.
func TestThin_StillStops(t *testing.T) {
	_, loop := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := loop(ctx, 0) // 0 - 1 wraps: 2^32 iterations
	var exit *sys.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != sys.ExitCodeDeadlineExceeded {
		t.Fatalf("err = %v, want the deadline's exit", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stopped after %v", d)
	}
}
