package httpwasm

import (
	"context"
	"fmt"
	"slices"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	httpapi "github.com/sluicehq/sluice/runtime/api"
	"github.com/sluicehq/sluice/runtime/internal/core"
)

// WASIModule is the WASI preview 1 import module.
const WASIModule = core.WASIModule

// Info is what the runtime learns about a guest from its compiled module.
type Info = core.Info

// Binding is the http-wasm binding of the runtime's core: its Check, and
// the definition of its host module.
type Binding struct{}

var _ core.Binding = Binding{}

// Name implements core.Binding.
func (Binding) Name() string { return "http-wasm" }

// Check implements core.Binding; see the function Check.
func (Binding) Check(m wazero.CompiledModule) (Info, error) { return Check(m) }

// Define implements core.Binding: it instantiates the http_handler host
// module. Its host functions reach the host's services through the
// Invocation of each call (its Logger is Services.Log's).
func (Binding) Define(ctx context.Context, rt wazero.Runtime, _ httpapi.Services) error {
	if _, err := Instantiate(ctx, rt); err != nil {
		return fmt.Errorf("define %s: %w", ModuleName, err)
	}
	return nil
}

// Check validates a compiled guest against the ABI: the two exports with
// their exact signatures, an exported memory, and imports only from
// http_handler (with matching signatures) and wasi_snapshot_preview1.
func Check(m wazero.CompiledModule) (Info, error) {
	var info Info
	exports := m.ExportedFunctions()
	if err := checkExport(exports, FuncHandleRequest, nil, []api.ValueType{i64}); err != nil {
		return info, err
	}
	if err := checkExport(exports, FuncHandleResponse, []api.ValueType{i32, i32}, nil); err != nil {
		return info, err
	}
	mem, ok := m.ExportedMemories()[Memory]
	if !ok {
		return info, fmt.Errorf("guest does not export memory %q", Memory)
	}
	info.MemoryMinPages = mem.Min()
	if len(m.ImportedMemories()) > 0 {
		return info, fmt.Errorf("guest imports a memory; it must define and export its own")
	}
	for _, f := range m.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch mod {
		case ModuleName:
			sig, ok := signatures[name]
			if !ok {
				return info, fmt.Errorf("guest imports unknown function %s.%s", mod, name)
			}
			if !slices.Equal(f.ParamTypes(), sig.params) || !slices.Equal(f.ResultTypes(), sig.results) {
				return info, fmt.Errorf("guest imports %s.%s with signature %s, want %s",
					mod, name, sigString(f.ParamTypes(), f.ResultTypes()), sigString(sig.params, sig.results))
			}
		case WASIModule:
			info.WASI = true
		default:
			return info, fmt.Errorf("guest imports %s.%s: only %s and %s are provided", mod, name, ModuleName, WASIModule)
		}
	}
	for _, start := range []string{"_initialize", "_start"} {
		if f, ok := exports[start]; ok {
			if len(f.ParamTypes()) != 0 || len(f.ResultTypes()) != 0 {
				return info, fmt.Errorf("guest exports %s with signature %s, want () -> ()", start, sigString(f.ParamTypes(), f.ResultTypes()))
			}
			info.Start = start
			break
		}
	}
	return info, nil
}

func checkExport(exports map[string]api.FunctionDefinition, name string, params, results []api.ValueType) error {
	f, ok := exports[name]
	if !ok {
		return fmt.Errorf("guest does not export function %s", name)
	}
	if !slices.Equal(f.ParamTypes(), params) || !slices.Equal(f.ResultTypes(), results) {
		return fmt.Errorf("guest exports %s with signature %s, want %s", name,
			sigString(f.ParamTypes(), f.ResultTypes()), sigString(params, results))
	}
	return nil
}

func sigString(params, results []api.ValueType) string {
	s := "("
	for i, p := range params {
		if i > 0 {
			s += ", "
		}
		s += api.ValueTypeName(p)
	}
	s += ") -> ("
	for i, r := range results {
		if i > 0 {
			s += ", "
		}
		s += api.ValueTypeName(r)
	}
	return s + ")"
}
