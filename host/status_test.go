package host

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/tlsconf/tlstest"
)

// statusConfig is a proxied route with a filter in front, and a route
// to two upstreams, one of which refuses connections (passive checks
// eject it after one failure; the other answers the retry).
const statusConfig = `
admin {
  listen = "127.0.0.1:%d"
}
filter "headers" {
  module = %q
  config = { response = { set = { "X-Checked" = "1" } } }
  pool {
    size = 2
  }
}
site "status.test" {
  listen = ["127.0.0.1:%d"]
  route "/api/" {
    filters = ["headers"]
    proxy {
      upstreams = [%q]
    }
  }
  route "/pair/" {
    proxy {
      upstreams = [%[5]q, %[4]q]
      passive_health {
        max_fails    = 1
        fail_timeout = "1m"
      }
    }
  }
}
`

// deadURL is an http:// address where nothing listens.
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

func startStatus(t *testing.T) (inst *Instance, admin, site, upstream, dead string) {
	t.Helper()
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "up") }))
	t.Cleanup(be.Close)
	dead = deadURL(t)
	port, aport := freePort(t), freePort(t)
	inst, _ = startSource(t, fmt.Sprintf(statusConfig, aport, guestModule(t, "../filters/headers/headers.wasm"), port, be.URL, dead), InstanceOptions{})
	return inst, "http://" + inst.AdminAddr(), fmt.Sprintf("http://127.0.0.1:%d", port), be.URL, dead
}

// getJSON decodes GET url into v and returns the raw body.
func getJSON(t *testing.T, url string, v any) string {
	t.Helper()
	code, body := tget(t, &http.Client{Timeout: 5 * time.Second}, url)
	if code != 200 {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v\n%s", url, err, body)
	}
	return body
}

var jsonKey = regexp.MustCompile(`"([^"\\]+)":`)

// checkSnakeCase fails on any object key of body that is not snake_case
// and on any zero time ("0001-01-01…").
func checkSnakeCase(t *testing.T, what, body string) {
	t.Helper()
	for _, m := range jsonKey.FindAllStringSubmatch(body, -1) {
		if !regexp.MustCompile(`^[a-z][a-z0-9_]*$`).MatchString(m[1]) {
			t.Errorf("%s: key %q is not snake_case", what, m[1])
		}
	}
	if strings.Contains(body, "0001-01-01") {
		t.Errorf("%s: a zero time: %s", what, body)
	}
}

// TestAdminStatusJSON: /status, /upstreams and /filters on a running
// server describe the route, its healthy upstream, the ejected one with
// its reason, and the filter's pool, in snake_case without zero times.
func TestAdminStatusJSON(t *testing.T) {
	_, admin, site, upstream, dead := startStatus(t)
	c := &http.Client{Timeout: 5 * time.Second}
	for range 3 {
		if code, body := tget(t, c, site+"/api/x"); code != 200 || body != "up" {
			t.Fatalf("GET /api/x: %d %q", code, body)
		}
	}
	for range 2 { // round robin: one of the two meets the dead upstream
		if code, body := tget(t, c, site+"/pair/x"); code != 200 {
			t.Fatalf("GET /pair/x: %d %q", code, body)
		}
	}

	var st struct {
		Build      struct{ Version, Commit string }
		Uptime     float64 `json:"uptime_seconds"`
		Generation struct {
			Number  uint64
			Reloads []struct{ OK bool }
		}
		Listeners []struct{ Address, Bound string }
		Sites     []struct {
			Name   string
			Routes []struct {
				Path, Handler, Target string
				Filters               []string
			}
		}
		Upstreams []json.RawMessage
		Filters   []json.RawMessage
		Store     *struct{}
	}
	body := getJSON(t, admin+"/status", &st)
	checkSnakeCase(t, "/status", body)
	if st.Build.Version == "" || st.Uptime <= 0 {
		t.Errorf("build %+v, uptime %v", st.Build, st.Uptime)
	}
	if st.Generation.Number != 1 || len(st.Generation.Reloads) != 1 || !st.Generation.Reloads[0].OK {
		t.Errorf("generation %+v, want number 1 with one ok load", st.Generation)
	}
	if len(st.Listeners) != 1 || st.Listeners[0].Bound == "" {
		t.Errorf("listeners %+v", st.Listeners)
	}
	if len(st.Sites) != 1 || len(st.Sites[0].Routes) != 2 || len(st.Upstreams) != 3 {
		t.Fatalf("sites %+v", st.Sites)
	}
	if r := st.Sites[0].Routes[0]; r.Path != "/api/" || r.Handler != "proxy" || r.Target != upstream || len(r.Filters) != 1 || r.Filters[0] != "headers" {
		t.Errorf("route %+v", r)
	}
	if st.Store != nil {
		t.Error("a store without a store block")
	}

	type upstreamJSON struct {
		Site, Route, Address, Reason string
		Healthy, Down, Ejected       bool
		InFlight                     *int64  `json:"in_flight"`
		Requests                     uint64  `json:"num_requests"`
		Fails                        uint64  `json:"fails"`
		EjectedFor                   float64 `json:"ejected_for_seconds"`
		Recent                       *struct {
			ErrorRate *float64 `json:"error_rate"`
			LatencyMS *float64 `json:"latency_ms"`
		}
		Samples []struct{} `json:"samples"`
	}
	var ups []upstreamJSON
	body = getJSON(t, admin+"/upstreams", &ups)
	checkSnakeCase(t, "/upstreams", body)
	if len(ups) != 3 {
		t.Fatalf("/upstreams: %d, want 3:\n%s", len(ups), body)
	}
	if u := ups[0]; u.Route != "/api/" || u.Address != upstream || !u.Healthy || u.Down || u.Ejected || u.Requests != 3 ||
		u.Fails != 0 || u.InFlight == nil || u.Reason != "" || u.Recent == nil || u.Recent.ErrorRate == nil || u.Samples == nil {
		t.Errorf("the healthy upstream: %+v", u)
	}
	if u := ups[1]; u.Route != "/pair/" || u.Address != dead || u.Healthy || !u.Ejected || u.Fails != 1 || u.EjectedFor <= 0 ||
		!strings.Contains(u.Reason, "passive_health: max_fails = 1 reached; out for 1m0s; last error: ") {
		t.Errorf("the dead upstream: %+v", u)
	}

	var fs []map[string]any
	body = getJSON(t, admin+"/filters", &fs)
	checkSnakeCase(t, "/filters", body)
	if len(fs) != 1 {
		t.Fatalf("/filters: %s", body)
	}
	f := fs[0]
	if f["name"] != "headers" || f["pool_size"] != 2.0 || !strings.HasPrefix(fmt.Sprint(f["digest"]), "sha256:") ||
		f["invocations"].(float64) < 3 || f["in_use"] != 0.0 {
		t.Errorf("/filters: %s", body)
	}
	if _, ok := f["last_swap"]; ok {
		t.Errorf("last_swap of a filter never swapped: %s", body)
	}
	phases, _ := f["phases"].([]any)
	if len(phases) == 0 {
		t.Fatalf("no phases: %s", body)
	}
	p := phases[0].(map[string]any)
	if p["phase"] != "request" || p["calls"].(float64) < 3 || p["p99_ms"].(float64) <= 0 {
		t.Errorf("phase %v", p)
	}
}

// TestAdminStatusSamples: the samples behind the sparklines are taken
// when the API is asked, one per interval, and give the recent rate.
func TestAdminStatusSamples(t *testing.T) {
	inst, _, site, _, _ := startStatus(t)
	inst.sampler.MinInterval = time.Millisecond
	c := &http.Client{Timeout: 5 * time.Second}
	inst.Status() // the first sight: no sample yet
	for range 2 {
		tget(t, c, site+"/api/x")
	}
	time.Sleep(5 * time.Millisecond)
	st := inst.Status()
	u := st.Upstreams[0]
	if len(u.Samples) != 1 || u.Recent.Requests != 2 || u.Samples[0].PerSecond <= 0 || u.Recent.LatencyMS <= 0 {
		t.Errorf("upstream recent %+v samples %+v", u.Recent, u.Samples)
	}
	f := st.Filters[0]
	if len(f.Samples) != 1 || f.Recent.Requests < 2 {
		t.Errorf("filter recent %+v samples %+v", f.Recent, f.Samples)
	}
}

// TestAdminStatusReloadHistory: a refused reload shows as the last error
// and in the history; the next good one clears the error.
func TestAdminStatusReloadHistory(t *testing.T) {
	inst, path := startSource(t, fmt.Sprintf("admin {\n  listen = \"127.0.0.1:%d\"\n}\nsite \"a.test\" {\n  listen = [\"127.0.0.1:%d\"]\n  route \"/\" {\n    respond {\n      body = \"a\"\n    }\n  }\n}\n", freePort(t), freePort(t)), InstanceOptions{})
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("site {"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := inst.Reload(); err == nil {
		t.Fatal("a broken config reloaded")
	}
	g := inst.Status().Generation
	if g.Number != 1 || g.LastError == "" || len(g.Reloads) != 2 || g.Reloads[0].OK {
		t.Fatalf("after a refused reload: %+v", g)
	}
	if err := os.WriteFile(path, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := inst.Reload(); err != nil {
		t.Fatal(err)
	}
	g = inst.Status().Generation
	if g.Number != 2 || g.LastError != "" || len(g.Reloads) != 3 || !g.Reloads[0].OK || g.Reloads[0].Generation != 2 {
		t.Fatalf("after a good reload: %+v", g)
	}
}

// TestAdminStatusRefusesForeignOrigin: the status page, its files and
// the new endpoints sit behind the admin's Host and Origin checks.
func TestAdminStatusRefusesForeignOrigin(t *testing.T) {
	_, admin, _, _, _ := startStatus(t)
	c := &http.Client{Timeout: 5 * time.Second}
	for _, path := range []string{"/", "/ui/status.js", "/ui/status.css", "/status", "/upstreams", "/filters"} {
		for _, c2 := range []struct {
			name, host, origin string
			want               int
		}{
			{"own", "", "", 200},
			{"foreign host", "evil.example", "", 403},
			{"foreign origin", "", "http://evil.example", 403},
		} {
			req, _ := http.NewRequest("GET", admin+path, nil)
			if c2.host != "" {
				req.Host = c2.host
			}
			if c2.origin != "" {
				req.Header.Set("Origin", c2.origin)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c2.want {
				t.Errorf("%s %s: %d, want %d", path, c2.name, resp.StatusCode, c2.want)
			}
		}
	}
}

// TestAdminStatusCertificatesAndStore: a TLS site's certificate shows
// with its expiry and state, and the store block with what its calls
// found (a store nobody answers for is down, or unknown before a call).
func TestAdminStatusCertificatesAndStore(t *testing.T) {
	ca := tlstest.NewCA(t, tlstest.ECDSA)
	dir := t.TempDir()
	soon := time.Now().Add(5 * 24 * time.Hour).Truncate(time.Second)
	later := time.Now().Add(60 * 24 * time.Hour).Truncate(time.Second)
	ac, ak := ca.ServerUntil(t, soon, "a.test").Write(t, dir, "a-")
	bc, bk := ca.ServerUntil(t, later, "b.test").Write(t, dir, "b-")
	addr := tlsFreeAddr(t)
	site := func(name, cert, key string) string {
		return fmt.Sprintf("site %q {\n  listen = [%q]\n  tls {\n    cert = %q\n    key  = %q\n  }\n  route \"/\" {\n    respond {\n      body = \"ok\"\n    }\n  }\n}\n", name, addr, cert, key)
	}
	src := fmt.Sprintf("admin {\n  listen = \"127.0.0.1:%d\"\n}\nstore \"redis\" {\n  address = %q\n  timeout = \"200ms\"\n}\n", freePort(t), strings.TrimPrefix(deadURL(t), "http://")) +
		site("a.test", ac, ak) + site("b.test", bc, bk)
	inst, _ := startSource(t, src, InstanceOptions{})
	var st struct {
		Certificates []struct {
			Site, Name, Source, State string
			NotAfter                  *time.Time `json:"not_after"`
			DaysLeft                  *float64   `json:"days_left"`
		}
		Store *struct {
			Address, State string
			Errors         map[string]uint64
		}
	}
	body := getJSON(t, "http://"+inst.AdminAddr()+"/status", &st)
	checkSnakeCase(t, "/status", body)
	if len(st.Certificates) != 2 {
		t.Fatalf("certificates: %s", body)
	}
	for i, want := range []struct {
		site, state string
		exp         time.Time
	}{{"a.test", "expiring", soon}, {"b.test", "valid", later}} {
		c := st.Certificates[i]
		if c.Site != want.site || c.Name != want.site || c.Source != "file" || c.State != want.state ||
			c.NotAfter == nil || !c.NotAfter.Equal(want.exp) || c.DaysLeft == nil || *c.DaysLeft < 4 {
			t.Errorf("certificate %d: %+v, want %s %s", i, c, want.site, want.state)
		}
	}
	if st.Store == nil || st.Store.Address == "" || (st.Store.State != "down" && st.Store.State != "unknown") || st.Store.Errors == nil {
		t.Errorf("store: %s", body)
	}
}
