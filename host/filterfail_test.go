package host

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
