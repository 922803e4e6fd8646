package filters_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/filtertest"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// configs are the smallest valid config of each filter, for measuring.
var configs = map[string]string{
	"keyauth":   `{"keys": {"alice": "k1"}}`,
	"basicauth": `{"users": {"alice": "$2a$04$0123456789012345678901uL8XOW1RIwMW3v7ZaE0yCzbOr8fE4Wm"}}`,
	"jwt":       `{"keys": [{"secret": "s"}]}`,
	"headers":   `{"request": {"set": {"X-A": "1"}}}`,
	"rewrite":   `{"rules": [{"match": "^/a/(.*)$", "replace": "/b/$1"}]}`,
	"cors":      `{"allowed_origins": ["*"]}`,
	"waf":       `{}`,
}

// TestFootprint logs each filter's module size, instantiate time through
// the runtime and linear memory after _initialize: the numbers in the
// READMEs (go test -run Footprint -v ./filters/).
func TestFootprint(t *testing.T) {
	for _, name := range guests(t) {
		cfg, ok := configs[name]
		if !ok {
			t.Errorf("%s: no config in configs", name)
			continue
		}
		wasm, err := os.ReadFile(filepath.Join(name, name+".wasm"))
		if err != nil {
			t.Fatal(err)
		}
		f := load(t, name, cfg) // compiled, so instantiation is what is timed
		n := 5
		if name == "waf" {
			n = 1 // parsing the CRS takes a second or more
		}
		var total time.Duration
		for range n {
			g, err := filtertest.LoadOn(context.Background(), sharedEngine(t), name, wasm, runtime.FilterOptions{Config: []byte(cfg), PoolSize: 1, InitTimeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			total += g.Instantiate
			g.Close()
		}
		f.Close()
		pages := memoryPages(t, wasm, cfg)
		t.Logf("%-10s %8.1f KiB  instantiate %8s  memory %d pages (%.2f MiB)", name, float64(len(wasm))/1024,
			(total / time.Duration(n)).Round(time.Microsecond), pages, float64(pages)/16)
	}
}

// memoryPages instantiates wasm under a stub http_handler and returns the
// size of its memory after _initialize or _start, in 64 KiB pages.
func memoryPages(t testing.TB, wasm []byte, config string) uint32 {
	ctx := context.Background()
	cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(os.TempDir(), "sluice-test-wasm-cache", "footprint"))
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close(ctx)
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache))
	defer r.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	b := r.NewHostModuleBuilder("http_handler")
	stub := func(name string, params []api.ValueType, results ...api.ValueType) {
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) {
			for i := range results {
				stack[i] = 0
			}
		}), params, results).Export(name)
	}
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, m api.Module, stack []uint64) {
		if uint32(stack[1]) >= uint32(len(config)) {
			m.Memory().Write(uint32(stack[0]), []byte(config))
		}
		stack[0] = uint64(len(config))
	}), []api.ValueType{i32, i32}, []api.ValueType{i32}).Export("get_config")
	stub("enable_features", []api.ValueType{i32}, i32)
	stub("log_enabled", []api.ValueType{i32}, i32)
	stub("log", []api.ValueType{i32, i32, i32})
	for _, name := range []string{"get_method", "get_uri", "get_protocol_version", "get_source_addr"} {
		stub(name, []api.ValueType{i32, i32}, i32)
	}
	stub("set_method", []api.ValueType{i32, i32})
	stub("set_uri", []api.ValueType{i32, i32})
	stub("get_header_names", []api.ValueType{i32, i32, i32}, i64)
	stub("get_header_values", []api.ValueType{i32, i32, i32, i32, i32}, i64)
	stub("set_header_value", []api.ValueType{i32, i32, i32, i32, i32})
	stub("add_header_value", []api.ValueType{i32, i32, i32, i32, i32})
	stub("remove_header", []api.ValueType{i32, i32, i32})
	stub("read_body", []api.ValueType{i32, i32, i32}, i64)
	stub("write_body", []api.ValueType{i32, i32, i32})
	stub("get_status_code", nil, i32)
	stub("set_status_code", []api.ValueType{i32})
	if _, err := b.Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := r.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithStartFunctions("_initialize", "_start"))
	if err != nil {
		t.Fatal(err)
	}
	return m.Memory().Size() / 65536
}

// BenchmarkInstantiate measures starting one instance of each filter
// (the module already compiled).
func BenchmarkInstantiate(b *testing.B) {
	for _, name := range guests(b) {
		b.Run(name, func(b *testing.B) {
			wasm, _ := os.ReadFile(filepath.Join(name, name+".wasm"))
			pin := load(b, name, configs[name])
			defer pin.Close()
			for b.Loop() {
				f, err := filtertest.LoadOn(context.Background(), sharedEngine(b), name, wasm, runtime.FilterOptions{Config: []byte(configs[name]), PoolSize: 1})
				if err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
		})
	}
}
