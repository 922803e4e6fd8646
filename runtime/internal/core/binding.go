package core

import (
	"context"

	"github.com/tetratelabs/wazero"

	"github.com/sluicehq/sluice/runtime/api"
)

// WASIModule is the WASI preview 1 import module, which the runtime
// defines for a guest of any ABI that imports it.
const WASIModule = "wasi_snapshot_preview1"

// Info is what the runtime learns about a guest from its compiled module,
// whatever its ABI.
type Info struct {
	// WASI is true when the guest imports wasi_snapshot_preview1.
	WASI bool
	// Start is the export run once per instance: "_initialize" (reactors),
	// else "_start" (TinyGo), else "".
	Start string
	// MemoryMinPages is the initial size of the exported memory.
	MemoryMinPages uint32
}

// Binding is one host ABI of the runtime, in a package of its own
// (runtime/internal/httpwasm is the http-wasm one): the engine defines
// each binding's host modules once and picks, for each compiled guest,
// the binding whose Check accepts it. A second ABI is a second Binding.
type Binding interface {
	// Name names the ABI in errors ("http-wasm").
	Name() string
	// Check reports whether m is a guest of the ABI, and what the runtime
	// needs to know to instantiate it; the error says why it is not.
	Check(m wazero.CompiledModule) (Info, error)
	// Define instantiates the ABI's host modules in rt, once per runtime.
	// services are the host's (runtime/api), for the binding's host
	// functions to use.
	Define(ctx context.Context, rt wazero.Runtime, services api.Services) error
}
