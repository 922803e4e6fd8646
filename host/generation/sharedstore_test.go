package generation

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/sluicehq/sluice/config"
)

// TestStoreUnreachableWarns: a config whose store does not answer still
// loads (requests follow on_store_error), with a warning that names the
// address and not the password.
func TestStoreUnreachableWarns(t *testing.T) {
	m := miniredis.RunT(t)
	addr := m.Addr()
	m.Close()
	src := fmt.Sprintf(`
store "redis" {
  address  = %q
  password = "hunter2-store"
  timeout  = "100ms"
}
site "a.test" {
  route "/" {
    respond { body = "ok" }
    rate_limit {
      rate           = "1/m"
      on_store_error = "deny"
    }
  }
}
`, addr)
	cfg, diags := config.Parse("store.hcl", []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var logs bytes.Buffer
	g, err := Build(cfg, Deps{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("an unreachable store refused the config: %v", err)
	}
	defer g.Close(slog.New(slog.NewTextHandler(io.Discard, nil)))
	out := logs.String()
	if !strings.Contains(out, "store: not answering") || !strings.Contains(out, addr) {
		t.Errorf("no warning naming %s:\n%s", addr, out)
	}
	if strings.Contains(out, "hunter2-store") {
		t.Errorf("the log shows the store password:\n%s", out)
	}
	j, _ := cfg.Redacted().JSON()
	if bytes.Contains(j, []byte("hunter2-store")) {
		t.Error("the effective config shows the store password")
	}
}
