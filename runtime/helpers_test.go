package runtime_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/filtertest"
)

// guest returns the committed binary of testdata/NAME.wasm.
func guest(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// logBuffer collects log output for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// observed records Observer calls.
type observed struct {
	mu    sync.Mutex
	calls []string // "filter phase outcome"
}

func (o *observed) Invocation(filter, phase, outcome string, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, filter+" "+phase+" "+outcome)
}

func (o *observed) has(s string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range o.calls {
		if c == s {
			return true
		}
	}
	return false
}

type env struct {
	e   *runtime.Engine
	log *logBuffer
	obs *observed
}

func newEnv(t testing.TB, opts ...func(*runtime.EngineOptions)) *env {
	t.Helper()
	ev := &env{log: &logBuffer{}, obs: &observed{}}
	o := runtime.EngineOptions{
		CacheDir: t.TempDir(),
		Logger:   slog.New(slog.NewTextHandler(ev.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Observer: ev.obs,
	}
	for _, fn := range opts {
		fn(&o)
	}
	e, err := runtime.NewEngine(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	ev.e = e
	return ev
}

// filter compiles testdata/NAME.wasm into a filter named NAME.
func (ev *env) filter(t testing.TB, name string, opts runtime.FilterOptions) *runtime.Filter {
	t.Helper()
	return ev.filterBytes(t, name, guest(t, name), opts)
}

func (ev *env) filterBytes(t testing.TB, name string, wasm []byte, opts runtime.FilterOptions) *runtime.Filter {
	t.Helper()
	ctx := context.Background()
	m, err := ev.e.Compile(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	f, err := ev.e.NewFilter(ctx, name, m, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := f.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return f
}

// roundTrip runs both phases on x with a next handler.
func roundTrip(f *runtime.Filter, x *filtertest.Exchange, next func(x *filtertest.Exchange)) (answered bool, err error) {
	c, err := f.HandleRequest(x)
	if err != nil || c == nil {
		return c == nil && err == nil, err
	}
	if next != nil {
		next(x)
	}
	return false, c.HandleResponse(x, false)
}

func TestGuestsUpToDate(t *testing.T) {
	wat2wasm, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Skip("wat2wasm not on PATH (apt-get install wabt); committed .wasm files not checked")
	}
	srcs, _ := filepath.Glob("testdata/*.wat")
	if len(srcs) == 0 {
		t.Fatal("no .wat files")
	}
	for _, src := range srcs {
		name := strings.TrimSuffix(filepath.Base(src), ".wat")
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), name+".wasm")
			if b, err := exec.Command(wat2wasm, src, "-o", out).CombinedOutput(); err != nil {
				t.Fatalf("wat2wasm: %v\n%s", err, b)
			}
			want, _ := os.ReadFile(out)
			if have := guest(t, name); !bytes.Equal(want, have) {
				t.Errorf("testdata/%s.wasm is stale; run: wat2wasm %s -o testdata/%s.wasm", name, src, name)
			}
		})
	}
}
