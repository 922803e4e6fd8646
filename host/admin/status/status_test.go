package status

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestReloadsBounded: the history keeps the last KeepReloads attempts,
// newest first, counts generations by successes, clips long errors, and
// a good load clears the last error.
func TestReloadsBounded(t *testing.T) {
	r := NewReloads("sluice.hcl")
	at := time.Unix(1000, 0)
	r.Loaded(at, nil)
	for i := range KeepReloads + 5 {
		r.Loaded(at.Add(time.Duration(i+1)*time.Second), errors.New(strings.Repeat("x", 3*maxErrorText)))
	}
	g := r.Generation()
	if g.Number != 1 || len(g.Reloads) != KeepReloads || g.LastError == "" || len(g.LastError) > maxErrorText+4 {
		t.Fatalf("after failures: number %d, %d reloads, last error %d bytes", g.Number, len(g.Reloads), len(g.LastError))
	}
	r.Loaded(at.Add(time.Hour), nil)
	g = r.Generation()
	if g.Number != 2 || g.LastError != "" || !g.Reloads[0].OK || g.Reloads[0].Generation != 2 || !g.LoadedAt.Equal(at.Add(time.Hour)) {
		t.Fatalf("after a good load: %+v", g.Reloads[0])
	}
}

func TestP99(t *testing.T) {
	for _, c := range []struct {
		durs []time.Duration
		want float64
	}{
		{nil, 0},
		{[]time.Duration{3 * time.Microsecond}, 0.005},
		{append(repeat(99, 10*time.Microsecond), time.Second), 0.01},
		{append(repeat(98, 10*time.Microsecond), time.Second, time.Second), 1000},
		{[]time.Duration{time.Minute}, 10000},
	} {
		var p Phases
		for _, d := range c.durs {
			p.Invocation("f", "request", "ok", d)
		}
		if got := p99(p.snapshot("f")["request"].b); got != c.want {
			t.Errorf("%d calls: p99 %v ms, want %v", len(c.durs), got, c.want)
		}
	}
}

func repeat(n int, d time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

// TestPhasesBounded: the (filter, phase) pairs counted are bounded;
// errors are counted by IsError.
func TestPhasesBounded(t *testing.T) {
	p := Phases{IsError: func(o string) bool { return o == "trap" }}
	for i := range maxPhaseKeys + 10 {
		p.Invocation(fmt.Sprint(i), "request", "trap", time.Millisecond)
	}
	if n := len(*p.m.Load()); n != maxPhaseKeys {
		t.Errorf("%d keys, want %d", n, maxPhaseKeys)
	}
	if c := p.snapshot("0")["request"]; c.calls != 1 || c.errors != 1 {
		t.Errorf("counts %+v", c)
	}
}

// TestSampler: a sample per interval at most, rates from the counters'
// deltas, a ring of KeepSamples, a restart when counters go back (a new
// generation) or after a long gap, and series of removed upstreams
// dropped.
func TestSampler(t *testing.T) {
	s := Sampler{MinInterval: time.Second}
	t0 := time.Unix(1000, 0)
	up := func(n, fails uint64) []Upstream {
		return []Upstream{{Site: "a", Route: "/", Address: "http://u", Requests: n, Fails: fails, Timed: n, Latency: time.Duration(n) * time.Millisecond}}
	}
	u := up(10, 0)
	s.Fill(t0, u, nil, nil)
	if len(u[0].Samples) != 0 {
		t.Fatalf("a sample at first sight: %+v", u[0].Samples)
	}
	u = up(20, 5)
	s.Fill(t0.Add(500*time.Millisecond), u, nil, nil)
	if len(u[0].Samples) != 0 {
		t.Fatal("a sample within the interval")
	}
	u = up(30, 5)
	s.Fill(t0.Add(2*time.Second), u, nil, nil)
	if p := u[0].Samples; len(p) != 1 || p[0].PerSecond != 10 || p[0].ErrorRate != 0.25 || p[0].LatencyMS != 1 {
		t.Fatalf("samples %+v", p)
	}
	if r := u[0].Recent; r.Requests != 20 || r.Failures != 5 || r.ErrorRate != 0.25 || r.Seconds != 2 || r.LatencyMS != 1 {
		t.Fatalf("recent %+v", r)
	}
	at := t0.Add(2 * time.Second)
	for i := range 2 * KeepSamples {
		at = at.Add(time.Second)
		u = up(uint64(40+i*10), 5)
		s.Fill(at, u, nil, nil)
	}
	if len(u[0].Samples) != KeepSamples {
		t.Fatalf("%d samples kept, want %d", len(u[0].Samples), KeepSamples)
	}
	u = up(1, 0) // a new generation: counters from zero
	s.Fill(at.Add(time.Second), u, nil, nil)
	if len(u[0].Samples) != 0 {
		t.Fatalf("samples across a counter reset: %d", len(u[0].Samples))
	}
	s.Fill(at.Add(2*time.Second), up(2, 0), nil, nil)
	u = up(3, 0)
	s.Fill(at.Add(time.Hour), u, nil, nil)
	if len(u[0].Samples) != 0 {
		t.Fatal("samples across a long gap")
	}
	s.Fill(at.Add(time.Hour+time.Second), nil, nil, nil)
	if len(s.ups) != 0 {
		t.Fatal("the series of a removed upstream kept")
	}
}

// TestSamplerFilterPhases: a filter's p99 covers the window of the
// samples kept, not the calls before it.
func TestSamplerFilterPhases(t *testing.T) {
	var s Sampler
	var p Phases
	t0 := time.Unix(1000, 0)
	for range 100 {
		p.Invocation("f", "request", "ok", time.Second) // before the window
	}
	f := []Filter{{Name: "f", Invocations: 100}}
	s.Fill(t0, nil, f, &p)
	if len(f[0].Phases) != 1 || f[0].Phases[0].P99MS != 1000 {
		t.Fatalf("phases before any sample: %+v", f[0].Phases)
	}
	for range 100 {
		p.Invocation("f", "request", "ok", 10*time.Microsecond)
	}
	f = []Filter{{Name: "f", Invocations: 200}}
	s.Fill(t0.Add(time.Second), nil, f, &p)
	if ph := f[0].Phases; len(ph) != 1 || ph[0].Calls != 200 || ph[0].P99MS != 0.01 {
		t.Fatalf("phases over the window: %+v", ph)
	}
	if len(f[0].Samples) != 1 || f[0].Samples[0].PerSecond != 100 {
		t.Fatalf("filter samples %+v", f[0].Samples)
	}
}

// TestJSONShape: snake_case keys, zero times left out.
func TestJSONShape(t *testing.T) {
	b, err := json.Marshal(Status{StartedAt: time.Unix(1, 0), Now: time.Unix(2, 0), Filters: []Filter{{Name: "f", LastSwap: Time(time.Time{})}}})
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, bad := range []string{"last_swap", "0001-01-01", "PoolSize", "Timed", "Latency\""} {
		if strings.Contains(s, bad) {
			t.Errorf("%q in %s", bad, s)
		}
	}
	for _, want := range []string{`"pool_size":0`, `"uptime_seconds"`, `"store":null`} {
		if !strings.Contains(s, want) {
			t.Errorf("no %s in %s", want, s)
		}
	}
}

// TestPhasesHammer: calls from many goroutines, new keys among them,
// while snapshots are read: every call is counted once.
func TestPhasesHammer(t *testing.T) {
	var p Phases
	var s Sampler
	done := make(chan struct{})
	const workers, calls = 8, 2000
	for w := range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range calls {
				p.Invocation(fmt.Sprint("f", i%4), []string{"request", "response"}[w%2], "ok", time.Duration(i)*time.Microsecond)
			}
		}()
	}
	for range 50 {
		s.Fill(time.Now(), nil, []Filter{{Name: "f0"}}, &p)
	}
	for range workers {
		<-done
	}
	var total uint64
	for i := range 4 {
		for _, c := range p.snapshot(fmt.Sprint("f", i)) {
			total += c.calls
		}
	}
	if total != workers*calls {
		t.Errorf("%d calls counted, want %d", total, workers*calls)
	}
}

func BenchmarkPhases_Invocation(b *testing.B) {
	var p Phases
	p.IsError = func(o string) bool { return o == "trap" }
	p.Invocation("auth", "request", "ok", time.Microsecond)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p.Invocation("auth", "request", "ok", 40*time.Microsecond)
		}
	})
}
