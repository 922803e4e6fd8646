package respond_test

import (
	"io"
	"testing"

	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/respond"
)

func TestRespond(t *testing.T) {
	for _, tt := range []struct {
		name       string
		o          *respond.Options
		status     int
		body, ctyp string
		extra      [2]string
	}{
		{"defaults", respond.Defaults(), 200, "", "", [2]string{}},
		{"body gets text/plain", &respond.Options{Status: 404, Body: "nothing here"}, 404, "nothing here", "text/plain; charset=utf-8", [2]string{}},
		{"own content type and header", &respond.Options{Status: 403, Body: "{}",
			Headers: map[string]string{"Content-Type": "application/json", "X-Why": "policy"}}, 403, "{}", "application/json", [2]string{"X-Why", "policy"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, e := range exchangetest.Engines(t, respond.New(tt.o)) {
				resp, err := e.Client.Get(e.URL + "/any/path")
				if err != nil {
					t.Fatalf("%s: %v", e.Name, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tt.status || string(body) != tt.body || resp.Header.Get("Content-Type") != tt.ctyp {
					t.Errorf("%s: %d %q %q, want %d %q %q", e.Name, resp.StatusCode, body, resp.Header.Get("Content-Type"), tt.status, tt.body, tt.ctyp)
				}
				if tt.extra[0] != "" && resp.Header.Get(tt.extra[0]) != tt.extra[1] {
					t.Errorf("%s: %s = %q, want %q", e.Name, tt.extra[0], resp.Header.Get(tt.extra[0]), tt.extra[1])
				}
			}
		})
	}
}
