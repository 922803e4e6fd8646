package host

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/chain"
	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/runtime"
)

// TestFilterFailedInvocationHeaders: a filter invocation that fails
// leaves none of its response header changes behind; the error is
// rendered on the response as it was before the invocation. The shipped
// headers filter, in handle_response, removes X-Upstream, sets X-Crash,
// then sets a field with an invalid name, which traps.
func TestFilterFailedInvocationHeaders(t *testing.T) {
	ctx := context.Background()
	e, err := runtime.NewEngine(ctx, runtime.EngineOptions{CacheDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(ctx) })
	wasm, err := os.ReadFile("../filters/headers/headers.wasm")
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.Compile(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	f, err := e.NewFilter(ctx, "headers", m, runtime.FilterOptions{
		Config:   []byte(`{"response": {"remove": ["X-Upstream"], "set": {"X-Crash": "set", "bad name": "x"}}}`),
		PoolSize: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close(ctx) })
	next := exchange.HandlerFunc(func(x exchange.Exchange) error {
		x.SetResponseHeader("X-Upstream", "yes")
		x.AddResponseHeader("X-Upstream", "twice")
		x.SetBody([]byte("from upstream\n"))
		return nil
	})
	for _, en := range exchangetest.Engines(t, chain.New([]chain.Filter{f}, next)) {
		t.Run(en.Name, func(t *testing.T) {
			resp, err := en.Client.Get(en.URL + "/")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusInternalServerError || string(body) != "filter failed\n" {
				t.Fatalf("got %d %q, want 500 from the trap", resp.StatusCode, body)
			}
			if got := resp.Header.Values("X-Crash"); len(got) != 0 {
				t.Errorf("X-Crash = %q: the failed invocation's header was kept", got)
			}
			if got := resp.Header.Values("X-Upstream"); len(got) != 2 || got[0] != "yes" || got[1] != "twice" {
				t.Errorf("X-Upstream = %q, want [yes twice]: the failed invocation's removal was kept", got)
			}
		})
	}
}

// TestStartFilterSetupError: a filter whose setup rejects its config fails
// Start (and so `sluice serve`) with the guest's message as the error,
// the filter named once, and nothing of the guest logged besides.
func TestStartFilterSetupError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sluice.hcl")
	src := fmt.Sprintf(`
filter "api-key" {
  module = %q
  config = { keys = ["k1"], header = 42 }
  pool {
    size = 4
  }
}
site "*" {
  listen = ["127.0.0.1:%d"]
  route "/" {
    filters = ["api-key"]
    respond {}
  }
}
`, guestModule(t, "../filters/keyauth/keyauth.wasm"), freePort(t))
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	inst, err := Start(InstanceOptions{Path: path, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err == nil {
		inst.Shutdown(context.Background())
		t.Fatal("Start succeeded")
	}
	want := `filter "api-key": filter setup: header must be a string` + "\n\t_initialize failed: wasm trap: wasm error: unreachable"
	if err.Error() != want {
		t.Errorf("error:\n%s\nwant:\n%s", err, want)
	}
	if strings.Contains(logs.String(), "source=") {
		t.Errorf("the guest's output was logged besides:\n%s", logs.String())
	}
}
