package deploy_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/examples/internal/exampletest"
)

// TestImageConfig boots the container image's sluice.hcl (on free
// ports): the page it serves, and the admin /healthz that the image's
// HEALTHCHECK (sluice health) asks.
func TestImageConfig(t *testing.T) {
	site, admin := exampletest.FreeAddr(t), exampletest.FreeAddr(t)
	exampletest.Boot(t, map[string]string{":8080": site, "127.0.0.1:2019": admin})
	resp, body := exampletest.Do(t, "GET", "http://"+site+"/", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "sluice is running") {
		t.Fatalf("GET /: %d %q", resp.StatusCode, body)
	}
	resp, body = exampletest.Do(t, "GET", "http://"+admin+"/healthz", nil)
	if resp.StatusCode != 200 || string(body) != "ok\n" {
		t.Fatalf("GET /healthz: %d %q", resp.StatusCode, body)
	}
}
