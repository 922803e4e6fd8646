package host

import (
	"fmt"
	"testing"

	"github.com/alicebob/miniredis/v2"
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
