package host

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange/exchangetest"
)

// TestServerHeaderEngines: server_header is the Server field of sluice's
// own answers on every engine, the listener's included (fasthttp said
// "sluice", net/http, host/h2 and HTTP/3 said nothing); an upstream's
// own Server is passed on, as Caddy does; "" sends none.
func TestServerHeaderEngines(t *testing.T) {
	withServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", "upstream/2.0")
	}))
	t.Cleanup(withServer.Close)
	without := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(without.Close)
	routes := `
  route "/own" {
    respond { body = "hi" }
  }
  route "/up/" {
    proxy { upstreams = ["` + withServer.URL + `"] }
  }
  route "/bare/" {
    proxy { upstreams = ["` + without.URL + `"] }
  }
`
	for _, tc := range []struct {
		name, server string // the server block ("" for none)
		want         string // sluice's own Server field
	}{
		{"default", "", "sluice"},
		{"configured", `server { server_header = "edge/1" }`, "edge/1"},
		{"removed", `server { server_header = "" }`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startConfig(t, tc.server+`
site "a.test" {
  listen = ["127.0.0.1:PORT"]
`+routes+`}
`)
			addr := strings.TrimPrefix(srv.URL, "http://")
			engines := append([]exchangetest.Engine{{Name: "listener", URL: srv.URL, Client: &http.Client{Timeout: 10 * time.Second}}},
				exchangetest.Engines(t, srv.Inst.Server().dispatchAt(addr))...)
			for _, e := range engines {
				for path, want := range map[string]string{"/own": tc.want, "/missing": tc.want, "/up/": "upstream/2.0", "/bare/": tc.want} {
					req, _ := http.NewRequest("GET", e.URL+path, nil)
					req.Host = "a.test"
					resp, err := e.Client.Do(req)
					if err != nil {
						t.Fatalf("%s %s: %v", e.Name, path, err)
					}
					resp.Body.Close()
					got := strings.Join(resp.Header.Values("Server"), "|")
					if got != want {
						t.Errorf("%s %s: Server %q, want %q", e.Name, path, got, want)
					}
				}
			}
		})
	}
}
