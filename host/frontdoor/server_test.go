package frontdoor_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/frontdoor"
	"github.com/sluicehq/sluice/host/route"
)

// TestServerHeader: the Server field is decided once, by the door, and is
// the same on every engine (fasthttp used to say "sluice" where net/http
// and host/h2 said nothing); a handler's own value wins, a handler can
// remove it, and "" sends none, on every engine.
func TestServerHeader(t *testing.T) {
	cases := []struct {
		name, server string
		handler      func(x exchange.Exchange) // what next does to the field
		host         string                    // "" is a.test; others get the door's 404
		want         []string
	}{
		{"default", "sluice", nil, "", []string{"sluice"}},
		{"configured", "edge", nil, "", []string{"edge"}},
		{"none", "", nil, "", nil},
		{"none on an error", "", nil, "c.test", nil},
		{"on the door's own error", "sluice", nil, "c.test", []string{"sluice"}},
		{"upstream's own wins", "sluice", func(x exchange.Exchange) { x.AddResponseHeader("Server", "upstream/1.0") }, "", []string{"upstream/1.0"}},
		{"handler sets", "sluice", func(x exchange.Exchange) { x.SetResponseHeader("Server", "app") }, "", []string{"app"}},
		{"handler removes", "sluice", func(x exchange.Exchange) { x.DelResponseHeader("Server") }, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			table, err := route.NewTable([]*route.Site{{Name: "a.test", Hosts: []string{"a.test"}}})
			if err != nil {
				t.Fatal(err)
			}
			door := &frontdoor.Door{Sites: table, Server: tc.server}
			h := exchange.HandlerFunc(func(x exchange.Exchange) error {
				return door.Serve(x, "", func(*route.Site) error {
					if tc.handler != nil {
						tc.handler(x)
					}
					x.SetStatus(http.StatusOK)
					x.SetBody([]byte("ok"))
					return nil
				})
			})
			for _, e := range exchangetest.Engines(t, h) {
				req, _ := http.NewRequest("GET", e.URL+"/", nil)
				req.Host = "a.test"
				if tc.host != "" {
					req.Host = tc.host
				}
				resp, err := e.Client.Do(req)
				if err != nil {
					t.Fatalf("%s: %v", e.Name, err)
				}
				resp.Body.Close()
				if got := resp.Header.Values("Server"); strings.Join(got, "|") != strings.Join(tc.want, "|") {
					t.Errorf("%s: Server %q, want %q", e.Name, got, tc.want)
				}
			}
		})
	}
}
