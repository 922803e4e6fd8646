package abi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/runtime"
)

// The host passes its exchange straight in.
var _ runtime.HTTP = exchange.Exchange(nil)

// newEngine returns a runtime engine logging to the test log on failure.
func newEngine(t testing.TB) *runtime.Engine {
	t.Helper()
	e, err := runtime.NewEngine(context.Background(), runtime.EngineOptions{
		CacheDir: t.TempDir(),
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

func newFilter(t testing.TB, e *runtime.Engine, name string, wasm []byte, opts runtime.FilterOptions) *runtime.Filter {
	t.Helper()
	ctx := context.Background()
	m, err := e.Compile(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	if opts.PoolSize == 0 {
		opts.PoolSize = 2
	}
	f, err := e.NewFilter(ctx, name, m, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		f.Close(ctx)
	})
	return f
}

// sluiceGuest reads a guest committed in runtime/testdata.
func sluiceGuest(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "runtime", "testdata", name+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// referenceDir is where the reference host module lies in the module
// cache; tests that need its guest files skip without it.
func referenceDir(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/http-wasm/http-wasm-host-go").Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		t.Skipf("http-wasm-host-go not in the module cache: %v", err)
	}
	return dir
}

// filterHandler is the filter chain of the host, reduced to one filter
// in front of next: request phase; next unless the guest answered;
// response phase, also when next failed.
func filterHandler(f *runtime.Filter, next http.Handler) exchange.Handler {
	return exchange.HandlerFunc(func(x exchange.Exchange) error {
		c, err := f.HandleRequest(x)
		if err != nil {
			return statusError(err)
		}
		if c == nil {
			return nil
		}
		nextErr := serveHTTP(x, next)
		if err := c.HandleResponse(x, nextErr != nil); err != nil {
			return statusError(err)
		}
		return nextErr
	})
}

// statusError maps runtime errors to statuses the way the host does.
func statusError(err error) error {
	status := http.StatusInternalServerError
	if errors.Is(err, runtime.ErrTimeout) || errors.Is(err, runtime.ErrOverload) {
		status = http.StatusServiceUnavailable
	}
	return &exchange.Error{Status: status, Message: http.StatusText(status), Err: err}
}

// serveHTTP runs a net/http handler on an exchange: the test-side
// adapter that lets the TCK backend (an http.Handler) be "next".
func serveHTTP(x exchange.Exchange, h http.Handler) (err error) {
	uri := string(x.RequestURI())
	u, perr := url.ParseRequestURI(uri)
	if perr != nil {
		return fmt.Errorf("next: %w", perr)
	}
	r := (&http.Request{
		Method:     string(x.Method()),
		URL:        u,
		RequestURI: uri,
		Host:       string(x.Host()),
		Header:     http.Header{},
		Body:       io.NopCloser(x.RequestBody()),
		RemoteAddr: x.RemoteAddr().String(),
	}).WithContext(x.Context())
	r.Proto = x.Proto()
	r.ProtoMajor, r.ProtoMinor, _ = http.ParseHTTPVersion(r.Proto)
	r.ContentLength = x.ContentLength()
	x.VisitRequestHeaders(func(k, v []byte) {
		if !strings.EqualFold(string(k), "host") {
			r.Header.Add(string(k), string(v))
		}
	})
	w := &responseWriter{x: x, h: http.Header{}}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("next panicked: %v", p)
		}
	}()
	h.ServeHTTP(w, r)
	w.WriteHeader(http.StatusOK)
	return nil
}

// responseWriter writes into the exchange; headers are committed to it at
// the first WriteHeader or Write, as net/http does.
type responseWriter struct {
	x     exchange.Exchange
	h     http.Header
	wrote bool
}

func (w *responseWriter) Header() http.Header { return w.h }

func (w *responseWriter) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	for k, vs := range w.h {
		w.x.DelResponseHeader(k)
		for _, v := range vs {
			w.x.AddResponseHeader(k, v)
		}
	}
	w.x.SetStatus(code)
}

func (w *responseWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.x.Write(p)
}

// hookErr records the last error h returned.
func hookErr(h exchange.Handler, last *atomic.Value) exchange.Handler {
	return exchange.HandlerFunc(func(x exchange.Exchange) error {
		err := h.ServeExchange(x)
		if err != nil {
			last.Store(err)
		}
		return err
	})
}
