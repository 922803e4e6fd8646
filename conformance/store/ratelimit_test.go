//go:build conformance

package store_test

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const rateConfig = `
store "redis" {
  address = %q
  prefix  = "conf:"
}
admin {
  listen = "127.0.0.1:%%[2]d"
}
site "_" {
  listen = ["127.0.0.1:%%[1]d"]
  route "/limited" {
    rate_limit {
      rate  = "%d/s"
      burst = %d
    }
    respond {
      body = "ok"
    }
  }
  route "/allow" {
    rate_limit {
      rate           = "1/m"
      burst          = 1
      on_store_error = "allow"
    }
    respond {
      body = "ok"
    }
  }
  route "/deny" {
    rate_limit {
      rate           = "1/m"
      burst          = 1
      on_store_error = "deny"
    }
    respond {
      body = "ok"
    }
  }
}
`

func get(c *http.Client, url string) int {
	resp, err := c.Get(url)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestGlobalRateLimit: three instances, several clients each, one
// client key: what all three admit together is the one limit, within 5 %.
func TestGlobalRateLimit(t *testing.T) {
	const (
		rate    = 200 // per second, across the three
		burst   = 10
		clients = 9 // three per instance
		run     = 4 * time.Second
	)
	r := startRedis(t)
	cfg := sprintfConfig(r.Addr(), rate, burst)
	ins := []*instance{startSluice(t, cfg), startSluice(t, cfg), startSluice(t, cfg)}

	var admitted, refused, failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(run)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: 5 * time.Second}
			for n := 0; time.Now().Before(stop) && n < 1_000_000; n++ {
				switch get(c, ins[i%len(ins)].url+"/limited") {
				case 200:
					admitted.Add(1)
				case 429:
					refused.Add(1)
				default:
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	// Requests were sent for run; those in flight at its end were
	// decided within it, so the wind-down after it earns no tokens.
	elapsed := min(time.Since(start), run)
	want := rate*elapsed.Seconds() + burst
	got := float64(admitted.Load())
	t.Logf("%v: admitted %v (want %.0f), refused %d, failed %d", elapsed.Round(time.Millisecond), got, want, refused.Load(), failed.Load())
	if failed.Load() > 0 {
		t.Errorf("%d requests failed", failed.Load())
	}
	if refused.Load() < int64(got) {
		t.Fatalf("the clients did not press the limit (refused %d < admitted %v): the test proves nothing", refused.Load(), got)
	}
	if math.Abs(got-want)/want > 0.05 {
		t.Errorf("admitted %v in %v across three instances, want %.0f ± 5 %%", got, elapsed, want)
	}
}

// TestStoreOutage: with Redis gone, on_store_error decides (allow admits
// beyond the limit, deny answers 503) and the failures are counted; with
// Redis back the limit holds again, without a restart.
func TestStoreOutage(t *testing.T) {
	r := startRedis(t)
	cfg := sprintfConfig(r.Addr(), 100, 1)
	ins := []*instance{startSluice(t, cfg), startSluice(t, cfg), startSluice(t, cfg)}
	c := &http.Client{Timeout: 5 * time.Second}

	// Up: one request per minute, across all three.
	for _, path := range []string{"/allow", "/deny"} {
		codes := []int{get(c, ins[0].url+path), get(c, ins[1].url+path), get(c, ins[2].url+path)}
		if codes[0] != 200 || codes[1] != 429 || codes[2] != 429 {
			t.Fatalf("%s with the store up: %v, want [200 429 429]", path, codes)
		}
	}

	r.Stop()
	const series = `sluice_store_errors_total{operation="rate_limit"}`
	before := ins[0].metric(t, series)
	for i := range 6 {
		in := ins[i%3]
		if code := get(c, in.url+"/allow"); code != 200 {
			t.Errorf("/allow with the store down: %d, want 200 (on_store_error = \"allow\")", code)
		}
		if code := get(c, in.url+"/deny"); code != 503 {
			t.Errorf("/deny with the store down: %d, want 503 (on_store_error = \"deny\")", code)
		}
		time.Sleep(120 * time.Millisecond) // past the backoff, so the store is asked again
	}
	if after := ins[0].metric(t, series); !(after > before) {
		t.Errorf("%s went from %v to %v during the outage, want it to grow", series, before, after)
	}

	r.Start() // an empty store: every bucket starts full
	deadline := time.Now().Add(10 * time.Second)
	for {
		codes := []int{get(c, ins[0].url+"/deny"), get(c, ins[1].url+"/deny"), get(c, ins[2].url+"/deny")}
		if codes[0] == 200 && codes[1] == 429 && codes[2] == 429 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/deny after the store came back: %v, want [200 429 429]", codes)
		}
		time.Sleep(200 * time.Millisecond)
		r.flush(t)
	}
}

func sprintfConfig(addr string, rate, burst int) string {
	return fmt.Sprintf(rateConfig, addr, rate, burst)
}
