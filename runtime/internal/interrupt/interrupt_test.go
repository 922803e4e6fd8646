package interrupt

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"
)

func guest(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", name+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestInterrupt: a detached module's looping call fails with
// ExitCodeDeadlineExceeded once interrupted; Resume makes it callable
// again, and Close removes an interrupted module from the runtime (what
// wazero's own close does).
func TestInterrupt(t *testing.T) {
	if goruntime.GOARCH != "amd64" && goruntime.GOARCH != "arm64" {
		t.Skip("wazero's interpreter: not supported")
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
	defer rt.Close(ctx)
	compiled, err := rt.CompileModule(ctx, guest(t, "loop"))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName("m"))
	if err != nil {
		t.Fatal(err)
	}
	i, ok := For(mod)
	if !ok {
		t.Fatal("wazero's internals are not the ones this package knows")
	}
	if !i.Watched() {
		t.Fatal("WithCloseOnContextDone(true) but no goroutine per call")
	}
	i.Detach()
	if i.Watched() {
		t.Fatal("still watched after Detach")
	}
	errc := make(chan error, 1)
	go func() { _, err := mod.ExportedFunction("handle_request").Call(ctx); errc <- err }()
	time.Sleep(20 * time.Millisecond)
	if !i.Interrupt() {
		t.Fatal("Interrupt: module already closed")
	}
	select {
	case err := <-errc:
		var exit *sys.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != sys.ExitCodeDeadlineExceeded {
			t.Fatalf("err = %v, want exit code %d", err, sys.ExitCodeDeadlineExceeded)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("guest not stopped")
	}
	if !mod.IsClosed() || rt.Module("m") == nil {
		t.Fatalf("after Interrupt: closed %v, known to the runtime %v; want true, true", mod.IsClosed(), rt.Module("m") != nil)
	}
	// Resume puts it back in service: the next call runs.
	if !i.Resume() || mod.IsClosed() {
		t.Fatalf("Resume: module still closed")
	}
	if i.Resume() {
		t.Error("Resume of a module not interrupted reported true")
	}
	if _, err := mod.ExportedFunction("handle_response").Call(ctx, 0, 0); err != nil {
		t.Fatalf("call after Resume: %v", err)
	}
	// Interrupted again and not resumed, Close still closes it for good.
	if !i.Interrupt() {
		t.Fatal("second Interrupt: module already closed")
	}
	if err := i.Close(ctx, mod); err != nil {
		t.Fatal(err)
	}
	if rt.Module("m") != nil {
		t.Error("closed module still known to the runtime")
	}
}

func TestHasStartSection(t *testing.T) {
	tests := []struct {
		guest string
		want  bool
	}{
		{"loop", false},
		{"start_trap", false}, // an exported _start is not a start section
		{"start_section", true},
	}
	for _, tc := range tests {
		if got := HasStartSection(guest(t, tc.guest)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.guest, got, tc.want)
		}
	}
	if !HasStartSection([]byte("\x00asm\x01\x00\x00\x00\x01\xff")) {
		t.Error("truncated binary: false, want true")
	}
}
