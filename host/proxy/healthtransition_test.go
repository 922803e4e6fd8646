package proxy_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/proxy"
)

// transitionObserver records the transitions the proxy reports.
type transitionObserver struct {
	fakeObserver
	tmu sync.Mutex
	got []string // "to/reason"
}

func (o *transitionObserver) Transition(to, reason string) {
	o.tmu.Lock()
	o.got = append(o.got, to+"/"+reason)
	o.tmu.Unlock()
}

func (o *transitionObserver) transitions() []string {
	o.tmu.Lock()
	defer o.tmu.Unlock()
	return append([]string(nil), o.got...)
}

// syncBuffer is a log destination safe for the check goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines(substr string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range strings.Split(s.b.String(), "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out
}

// flaky is an upstream whose health endpoint always passes and whose
// other requests break (the connection closed without an answer) while
// broken is set: the case passive checks catch and active ones do not.
func flaky(t *testing.T, broken *atomic.Bool, healthy *atomic.Bool) string {
	return backend(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			if !healthy.Load() {
				w.WriteHeader(503)
			}
			return
		}
		if broken.Load() {
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				c.Close()
			}
			return
		}
		io.WriteString(w, "flaky")
	}).URL
}

// TestHealthTransitions: each way in and out of the rotation is
// reported once, with its reason, in the log and to the observer; an
// active check that passes rise times ends a passive ejection long
// before fail_timeout would.
func TestHealthTransitions(t *testing.T) {
	steady := backend(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "steady") }).URL
	cases := []struct {
		name    string
		health  bool          // an active check with rise 2
		cool    time.Duration // fail_timeout
		breakUp bool          // requests break (passive) rather than health failing (active)
		want    []string
	}{
		{"passive ejection ended by active rise", true, time.Minute, true,
			[]string{"ejected/passive_max_fails", "healthy/active_rise"}},
		{"passive ejection ended by cool down", false, 100 * time.Millisecond, true,
			[]string{"ejected/passive_max_fails", "healthy/cool_down_over"}},
		{"active fall then rise", true, time.Minute, false,
			[]string{"ejected/active_fall", "healthy/active_rise"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var broken, healthy atomic.Bool
			healthy.Store(true)
			up := flaky(t, &broken, &healthy)
			var obs *transitionObserver
			var logs syncBuffer
			o := proxy.Options{
				Upstreams: []proxy.Upstream{{URL: up}, {URL: steady}},
				Passive:   &proxy.Passive{MaxFails: 2, CoolDown: tc.cool},
				Observe: func(url string) proxy.UpstreamObserver {
					if url == up {
						obs = &transitionObserver{fakeObserver: fakeObserver{url: url}}
						return obs
					}
					return &fakeObserver{url: url}
				},
				Logger: slog.New(slog.NewTextHandler(&logs, nil)),
			}
			if tc.health {
				o.Health = &proxy.HealthCheck{Path: "/health", Interval: 10 * time.Millisecond, Timeout: time.Second, Rise: 2, Fall: 2}
			}
			p := newProxy(t, o)
			e := exchangetest.Engines(t, p)[0]
			start := time.Now()
			if tc.breakUp {
				broken.Store(true)
				for i := 0; i < 8 && p.Stats()[0].Healthy; i++ {
					get(t, e, "/")
				}
			} else {
				healthy.Store(false)
				within(t, 3*time.Second, func() bool { return !p.Stats()[0].Healthy })
			}
			if p.Stats()[0].Healthy {
				t.Fatal("upstream never taken out")
			}
			broken.Store(false)
			healthy.Store(true)
			if !within(t, 3*time.Second, func() bool { return len(obs.transitions()) >= 2 }) {
				t.Fatalf("transitions %v, want %v (within 3s; fail_timeout %v)", obs.transitions(), tc.want, tc.cool)
			}
			took := time.Since(start)
			if tc.cool == time.Minute && took > 10*time.Second {
				t.Errorf("back after %v", took)
			}
			if !p.Stats()[0].Healthy {
				t.Error("Stats: not healthy after the transition back")
			}
			seen := false
			for i := 0; i < 6 && !seen; i++ {
				_, body := get(t, e, "/")
				seen = body == "flaky"
			}
			if !seen {
				t.Error("the upstream back in rotation got no requests")
			}
			time.Sleep(30 * time.Millisecond) // three more checks: nothing more to report
			if got := obs.transitions(); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("transitions %v, want %v", got, tc.want)
			}
			if _, h, _ := obs.snapshot(); len(h) != 2 || h[0] || !h[1] {
				t.Errorf("SetHealthy %v, want [false true]", h)
			}
			out, back := logs.lines("proxy: upstream ejected"), logs.lines("proxy: upstream healthy again")
			if len(out) != 1 || len(back) != 1 {
				t.Fatalf("log: %d ejected and %d healthy lines, want 1 each:\n%s\n%s", len(out), len(back), out, back)
			}
			for i, l := range []string{out[0], back[0]} {
				reason := tc.want[i][strings.Index(tc.want[i], "/")+1:]
				if !strings.Contains(l, "reason="+reason) || !strings.Contains(l, "upstream="+up) {
					t.Errorf("log line %q: want reason=%s and upstream=%s", l, reason, up)
				}
			}
		})
	}
}
