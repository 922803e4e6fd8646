package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/gateway"
)

// decisionCounts returns one limit's counts by decision.
func decisionCounts(name string) map[string]uint64 {
	got := map[string]uint64{}
	gateway.EachDecisionCount(func(route, decision string, n uint64) {
		if route == name && n > 0 {
			got[decision] = n
		}
	})
	return got
}

// TestRateLimitHeaders: every answer of a limited route tells the client
// its limit (RateLimit-Policy, RateLimit: tokens left and seconds until
// full) and a refusal when to come back (Retry-After), on every engine;
// each decision is counted.
func TestRateLimitHeaders(t *testing.T) {
	for _, e := range exchangetest.Engines(t, ok) {
		t.Run(e.Name, func(t *testing.T) {
			name := "headers/" + e.Name
			l, err := gateway.NewLimiter(gateway.RateLimit{Rate: 1.0 / 60, Burst: 3, Name: name})
			if err != nil {
				t.Fatal(err)
			}
			eng := exchangetest.Engines(t, gateway.Wrap(ok, l, nil))[indexOf(t, e.Name)]
			tests := []struct {
				status                int
				rateLimit, retryAfter string
			}{
				{200, `"default";r=2;t=60`, ""},
				{200, `"default";r=1;t=120`, ""},
				{200, `"default";r=0;t=180`, ""},
				{429, `"default";r=0;t=180`, "60"},
			}
			for i, tt := range tests {
				resp, err := eng.Client.Get(eng.URL + "/")
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				h := resp.Header
				if resp.StatusCode != tt.status || h.Get("RateLimit-Policy") != `"default";q=3;w=180` ||
					h.Get("RateLimit") != tt.rateLimit || h.Get("Retry-After") != tt.retryAfter {
					t.Errorf("request %d: %d, RateLimit-Policy %q, RateLimit %q, Retry-After %q; want %d, %q, %q, %q",
						i, resp.StatusCode, h.Get("RateLimit-Policy"), h.Get("RateLimit"), h.Get("Retry-After"),
						tt.status, `"default";q=3;w=180`, tt.rateLimit, tt.retryAfter)
				}
			}
			if got, want := fmt.Sprint(decisionCounts(name)), fmt.Sprint(map[string]uint64{"admit": 3, "refuse": 1}); got != want {
				t.Errorf("decisions %s, want %s", got, want)
			}
		})
	}
}

// indexOf finds an engine's place in exchangetest.Engines.
func indexOf(t *testing.T, name string) int {
	for i, e := range exchangetest.Engines(t, ok) {
		if e.Name == name {
			return i
		}
	}
	t.Fatalf("no engine %q", name)
	return -1
}

// TestStoreErrorLocal: with on_store_error "local", a failing store
// leaves each instance to its own buckets: the limit still holds (per
// instance), and the decisions are counted as made locally.
func TestStoreErrorLocal(t *testing.T) {
	for _, e := range exchangetest.Engines(t, ok) {
		t.Run(e.Name, func(t *testing.T) {
			name := "local/" + e.Name
			f := newFake(100)
			f.fail = true
			l, err := gateway.NewLimiter(gateway.RateLimit{Rate: 1.0 / 60, Burst: 2, Shared: f, Name: name, OnStoreError: "local"})
			if err != nil {
				t.Fatal(err)
			}
			eng := exchangetest.Engines(t, gateway.Wrap(ok, l, nil))[indexOf(t, e.Name)]
			for i, want := range []int{200, 200, 429} {
				resp, err := eng.Client.Get(eng.URL + "/")
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Fatalf("request %d: %d, want %d", i, resp.StatusCode, want)
				}
				if want == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
					t.Errorf("a local refusal without Retry-After")
				}
			}
			if got, want := fmt.Sprint(decisionCounts(name)), fmt.Sprint(map[string]uint64{"local_admit": 2, "local_refuse": 1}); got != want {
				t.Errorf("decisions %s, want %s", got, want)
			}
		})
	}
}
