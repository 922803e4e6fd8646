package host

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/generation"
)

// TestSharedStoreRateLimit: two instances (two servers in one process,
// as the store does not care) with one store count one limit between
// them; without it each has its own.
func TestSharedStoreRateLimit(t *testing.T) {
	m := miniredis.RunT(t)
	site := `
site "a.test" {
  listen = ["127.0.0.1:PORT"]
  route "/" {
    respond { body = "ok" }
    rate_limit {
      rate  = "1/m"
      burst = 3
    }
  }
}
`
	withStore := fmt.Sprintf("store \"redis\" {\n  address = %q\n  prefix = %q\n}\n", m.Addr(), t.Name()+":") + site
	tests := []struct {
		name     string
		src      string
		admitted int // of 8 requests, 4 to each instance
	}{
		{"shared", withStore, 3},
		{"local", site, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, a, _ := startConfig(t, tt.src)
			_, b, _ := startConfig(t, tt.src)
			admitted := 0
			for i := range 8 {
				base := a
				if i%2 == 1 {
					base = b
				}
				if status, _ := get(t, base+"/", "a.test"); status == 200 {
					admitted++
				} else if status != 429 {
					t.Fatalf("request %d: %d", i, status)
				}
			}
			if admitted != tt.admitted {
				t.Errorf("admitted %d of 8, want %d", admitted, tt.admitted)
			}
		})
	}
}

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
	g, err := generation.Build(cfg, generation.Deps{Log: slog.New(slog.NewTextHandler(&logs, nil))})
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
