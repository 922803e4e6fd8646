package frontdoor_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/frontdoor"
	"github.com/sluicehq/sluice/host/route"
)

// doorEngines runs door behind every engine; next answers 200 with what
// it was given: the site, the target and the client as the door left
// them ("site=a.test uri=/x client=127.0.0.1 real=").
func doorEngines(t *testing.T, door *frontdoor.Door) []exchangetest.Engine {
	t.Helper()
	h := exchange.HandlerFunc(func(x exchange.Exchange) error {
		return door.Serve(x, "", func(s *route.Site) error {
			host, _, _ := net.SplitHostPort(x.RemoteAddr().String())
			x.SetStatus(http.StatusOK)
			x.SetBody([]byte("site=" + s.Name + " uri=" + string(x.RequestURI()) + " client=" + host +
				" real=" + string(x.RequestHeader("X-Real-IP"))))
			return nil
		})
	})
	return exchangetest.Engines(t, h)
}

// twoSites is a door for a.test and b.test, b.test the default.
func twoSites(t *testing.T) *frontdoor.Door {
	t.Helper()
	table, err := route.NewTable([]*route.Site{{Name: "a.test", Hosts: []string{"a.test"}},
		{Name: "b.test", Hosts: []string{"b.test"}, Default: true}})
	if err != nil {
		t.Fatal(err)
	}
	return &frontdoor.Door{Sites: table}
}

// sendRaw writes req on a fresh connection to addr and reads one
// answer: its status and body, status 0 when there was none.
func sendRaw(t *testing.T, addr, req string) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		return 0, ""
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDoorTargets: the HTTP version, the absolute-form authority and
// Host are decided once, the same on every HTTP/1.1 engine; Host (or
// :authority) picks the site on every engine.
func TestDoorTargets(t *testing.T) {
	engines := doorEngines(t, twoSites(t))
	cases := []struct {
		name, req string
		status    int
		body      string // a prefix of next's answer; "" when next is not reached
	}{
		{"origin-form", "GET /hello HTTP/1.1\r\nHost: a.test\r\n\r\n", 200, "site=a.test uri=/hello "},
		{"version 9.9", "GET /hello HTTP/9.9\r\nHost: a.test\r\n\r\n", 505, ""},
		{"version 2.0 over HTTP/1", "GET /hello HTTP/2.0\r\nHost: a.test\r\n\r\n", 505, ""},
		{"HTTP/1.0 without Host", "GET /hello HTTP/1.0\r\n\r\n", 200, "site=b.test uri=/hello "},
		// RFC 9112, 3.2.2: the target's authority replaces Host.
		{"absolute-form names the site", "GET http://a.test/hello HTTP/1.1\r\nHost: b.test\r\n\r\n", 200, "site=a.test uri=/hello "},
		{"absolute-form with a query", "GET http://a.test/hello?x=1 HTTP/1.1\r\nHost: b.test\r\n\r\n", 200, "site=a.test uri=/hello?x=1 "},
		{"absolute-form, empty path, query", "GET http://a.test?x=1 HTTP/1.1\r\nHost: a.test\r\n\r\n", 200, "site=a.test uri=/?x=1 "},
		{"absolute-form with a port", "GET http://A.TEST:80/hello HTTP/1.1\r\nHost: b.test\r\n\r\n", 200, "site=a.test uri=/hello "},
		{"absolute-form with userinfo", "GET http://u@a.test/hello HTTP/1.1\r\nHost: a.test\r\n\r\n", 400, ""},
		{"absolute-form, other scheme", "GET ftp://a.test/hello HTTP/1.1\r\nHost: a.test\r\n\r\n", 400, ""},
		{"Host with a path", "GET /hello HTTP/1.1\r\nHost: a.test/x\r\n\r\n", 400, ""},
		{"Host with a bad port", "GET /hello HTTP/1.1\r\nHost: a.test:8x\r\n\r\n", 400, ""},
		{"CONNECT on HTTP/1.1", "CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n", 400, ""},
	}
	for _, e := range engines {
		if e.Proto != "HTTP/1.1" {
			continue
		}
		for _, c := range cases {
			status, body := sendRaw(t, e.Addr(), c.req)
			if status != c.status || !strings.HasPrefix(body, c.body) || c.body == "" && strings.HasPrefix(body, "site=") {
				t.Errorf("%s: %s: %d %q, want %d %q", e.Name, c.name, status, body, c.status, c.body)
			}
		}
	}
	// The authority on every engine, HTTP/2 and HTTP/3 (:authority) too.
	for _, e := range engines {
		for _, c := range []struct {
			host   string
			status int
			site   string
		}{
			{"a.test", 200, "a.test"},
			{"A.TEST.:8080", 200, "a.test"},
			{"b.test", 200, "b.test"},
			{"a.test/x", 400, ""},
			{"a.test:8x", 400, ""},
		} {
			status, body := sendHost(t, e, c.host)
			// An engine may refuse a malformed :authority itself, with a
			// reset (0) rather than the door's 400.
			refused := c.status == 400 && status == 0 && e.Proto != "HTTP/1.1"
			if !refused && (status != c.status || c.site != "" && !strings.HasPrefix(body, "site="+c.site+" ")) {
				t.Errorf("%s: Host %q: %d %q, want %d, site %q", e.Name, c.host, status, body, c.status, c.site)
			}
		}
	}
}

// TestDoorClientAddress: the client is the peer, or, from a peer in
// Trusted, the address its X-Forwarded-For names; X-Real-IP is believed
// from trusted peers only and removed otherwise. On every engine.
func TestDoorClientAddress(t *testing.T) {
	for _, trusted := range []bool{true, false} {
		door := twoSites(t)
		if trusted {
			door.Trusted = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
		}
		for _, e := range doorEngines(t, door) {
			_, body := exchangetest.RawGet(t, e, "/", [][2]string{{"Host", "a.test"},
				{"X-Forwarded-For", "10.1.2.3"}, {"X-Real-IP", "6.6.6.6"}}, "")
			want := "client=127.0.0.1 real="
			if trusted {
				want = "client=10.1.2.3 real=6.6.6.6"
			}
			if !strings.HasSuffix(string(body), want) {
				t.Errorf("%s, trusted=%v: next saw %q, want %q", e.Name, trusted, body, want)
			}
			if _, body := exchangetest.RawGet(t, e, "/", [][2]string{{"Host", "a.test"}}, ""); !strings.HasSuffix(string(body), "client=127.0.0.1 real=") {
				t.Errorf("%s, trusted=%v: no forwarding header: next saw %q", e.Name, trusted, body)
			}
		}
	}
}

// sendHost sends GET /hello with Host (or :authority) host and returns
// the status and body; 0 when an HTTP/2 or HTTP/3 engine reset it.
func sendHost(t *testing.T, e exchangetest.Engine, host string) (int, string) {
	t.Helper()
	c := syntaxCase{method: "GET", uri: "/hello", fields: [][2]string{{":authority", host}}}
	switch e.Proto {
	case "HTTP/2.0":
		return sendH2(t, e, c)
	case "HTTP/3.0":
		return sendH3(t, e, c)
	}
	status, body := exchangetest.RawGet(t, e, "/hello", [][2]string{{"Host", host}}, "")
	return status, string(body)
}
