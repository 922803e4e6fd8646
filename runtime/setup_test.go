package runtime_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/runtime"
)

// TestFilter_SetupError: a guest whose setup fails (here, a config it
// rejects) fails NewFilter with what it said as the error, the filter
// named once, and what else it logged or wrote attached once, however
// large the pool: the first instance fails, no other is tried. Nothing of
// it is logged besides.
func TestFilter_SetupError(t *testing.T) {
	const trapped = "\n\t_initialize failed: wasm trap: wasm error: unreachable"
	tests := []struct {
		name, module, config string
		want                 string // the whole error, or its start with prefix
		prefix               bool
		once                 []string // each in the error exactly once
	}{{
		name:   "api-key", // the C SDK logs the message, then traps
		module: "../filters/keyauth/keyauth.wasm",
		config: `{"keys": ["k1"], "header": 42}`,
		want:   `filter "api-key": filter setup: header must be a string` + trapped,
	}, {
		name:   "debug-gate", // the Go SDK logs it, then panics: its stack goes to stderr
		module: "../filters/basicauth/basicauth.wasm",
		config: `{"tokn": "x"}`,
		want: `filter "debug-gate": filter setup: config: json: unknown field "tokn"` +
			"\n\tpanic: filter setup: config: json: unknown field \"tokn\"\n\n\tgoroutine 1 [running]:\n",
		prefix: true,
		once:   []string{"goroutine 1 [running]:", trapped},
	}, {
		name:   "start-trap", // says nothing: where it trapped is all there is
		module: "testdata/start_trap.wasm",
		want:   `filter "start-trap": setup failed` + "\n\t_start failed: wasm trap: wasm error: unreachable\n\twasm stack trace:\n\t\t.",
		prefix: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := newEnv(t)
			ctx := context.Background()
			wasm, err := os.ReadFile(tt.module)
			if err != nil {
				t.Fatal(err)
			}
			m, err := ev.e.Compile(ctx, wasm)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close(ctx)
			_, err = ev.e.NewFilter(ctx, tt.name, m, runtime.FilterOptions{Config: []byte(tt.config), PoolSize: 4})
			if err == nil {
				t.Fatal("NewFilter succeeded")
			}
			got := err.Error()
			if tt.prefix && !strings.HasPrefix(got, tt.want) || !tt.prefix && got != tt.want {
				t.Errorf("error:\n%s\nwant %s:\n%s", got, map[bool]string{true: "it to start with", false: "exactly"}[tt.prefix], tt.want)
			}
			for _, s := range append(tt.once, `filter "`+tt.name+`"`) {
				if n := strings.Count(got, s); n != 1 {
					t.Errorf("%q %d times in the error, want once:\n%s", s, n, got)
				}
			}
			var se *runtime.SetupError
			if !errors.As(err, &se) || !errors.Is(err, runtime.ErrTrap) {
				t.Errorf("error is not a *SetupError wrapping ErrTrap: %#v", err)
			}
			if logs := ev.log.String(); strings.Contains(logs, "source=") {
				t.Errorf("the guest's setup output was logged besides:\n%s", logs)
			}
		})
	}
}

// TestFilter_SetupFailsOnFirstInstance: a pool whose first instance fails
// to start tries no other (each would fail the same way, and write the
// same panic to stderr).
func TestFilter_SetupFailsOnFirstInstance(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	wasm, err := os.ReadFile("../filters/basicauth/basicauth.wasm")
	if err != nil {
		t.Fatal(err)
	}
	m, err := ev.e.Compile(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	var stderr logBuffer
	_, err = ev.e.NewFilter(ctx, "g", m, runtime.FilterOptions{
		Config:   []byte(`{"tokn": "x"}`),
		PoolSize: 4,
		WASI:     runtime.WASIOptions{Stderr: &stderr},
	})
	if err == nil {
		t.Fatal("NewFilter succeeded")
	}
	if n := strings.Count(stderr.String(), "goroutine 1 [running]:"); n != 1 {
		t.Errorf("%d instances started and panicked, want 1:\n%s", n, stderr.String())
	}
}
