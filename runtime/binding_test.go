package runtime

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/sluicehq/sluice/runtime/api"
	"github.com/sluicehq/sluice/runtime/internal/core"
	"github.com/sluicehq/sluice/runtime/internal/httpwasm"
)

// otherABI is a second binding that accepts any guest exporting "other".
type otherABI struct{}

func (otherABI) Name() string { return "other" }
func (otherABI) Check(m wazero.CompiledModule) (core.Info, error) {
	if _, ok := m.ExportedFunctions()["other"]; !ok {
		return core.Info{}, errors.New("no export other")
	}
	return core.Info{}, nil
}
func (otherABI) Define(context.Context, wazero.Runtime, api.Services) error { return nil }

// TestPickBinding: the engine picks the binding whose check accepts a
// guest; with none, the error gives each binding's reason.
func TestPickBinding(t *testing.T) {
	saved := bindings
	bindings = []core.Binding{otherABI{}, httpwasm.Binding{}}
	t.Cleanup(func() { bindings = saved })
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	wasm, err := os.ReadFile("testdata/noop.wasm")
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := pickBinding(compiled)
	if err != nil || b.Name() != "http-wasm" {
		t.Fatalf("noop: %v, %v; want the http-wasm binding", b, err)
	}
	empty, err := rt.CompileModule(ctx, []byte("\x00asm\x01\x00\x00\x00"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = pickBinding(empty)
	if err == nil || !strings.Contains(err.Error(), "not a other guest: no export other") || !strings.Contains(err.Error(), "not a http-wasm guest: guest does not export function handle_request") {
		t.Errorf("no binding's guest: %v, want each binding's reason", err)
	}
}
