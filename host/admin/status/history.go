package status

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of what is kept.
const (
	// KeepReloads is how many reload attempts Reloads keeps.
	KeepReloads = 20
	// KeepSamples is how many samples Sampler keeps per upstream and
	// filter: a minute at the page's one-second polling.
	KeepSamples = 60
	// maxErrorText bounds a kept error message (a config's diagnostics
	// can be long).
	maxErrorText = 2000
	// maxPhaseKeys bounds the (filter, phase) pairs Phases counts.
	maxPhaseKeys = 1024
)

// Reloads is the generation history: the start-up load and every
// reload attempt after it. It is safe for concurrent use.
type Reloads struct {
	mu      sync.Mutex
	file    string
	number  uint64
	at      time.Time
	lastErr string
	list    []Reload // newest last, at most KeepReloads
}

// NewReloads returns an empty history for the config file ("" for an
// in-memory config).
func NewReloads(file string) *Reloads { return &Reloads{file: file} }

// Loaded records a load attempt at at: err nil swapped a new generation
// in.
func (r *Reloads) Loaded(at time.Time, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := Reload{At: at, OK: err == nil}
	if err != nil {
		e.Error = clip(err.Error())
		r.lastErr = e.Error
	} else {
		r.number++
		r.at, r.lastErr = at, ""
		e.Generation = r.number
	}
	r.list = append(r.list, e)
	if len(r.list) > KeepReloads {
		r.list = append(r.list[:0], r.list[len(r.list)-KeepReloads:]...)
	}
}

// Generation returns the history, newest reload first.
func (r *Reloads) Generation() Generation {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := Generation{Number: r.number, LoadedAt: Time(r.at), File: r.file, LastError: r.lastErr,
		Reloads: make([]Reload, 0, len(r.list))}
	for i := len(r.list) - 1; i >= 0; i-- {
		g.Reloads = append(g.Reloads, r.list[i])
	}
	return g
}

func clip(s string) string {
	if len(s) > maxErrorText {
		return s[:maxErrorText] + "…"
	}
	return s
}

// bucketsUS are the latency histogram's upper bounds in microseconds;
// one more bucket counts what is over the last.
var bucketsUS = [...]float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7}

const nBuckets = len(bucketsUS) + 1

type phaseKey struct{ filter, phase string }

type hist struct {
	calls, errors atomic.Uint64
	b             [nBuckets]atomic.Uint64
}

// Phases counts filter calls by (filter, phase) with a latency
// histogram: a runtime.Observer (its method set). The zero value is
// ready to use.
type Phases struct {
	// IsError reports whether an outcome is a failure (the host sets
	// observe.ErrorOutcome); nil counts none.
	IsError func(outcome string) bool

	mu sync.Mutex                         // serializes adding keys
	m  atomic.Pointer[map[phaseKey]*hist] // copied on write: reads take no lock
}

// Invocation records one filter call. After the first call of a
// (filter, phase) it takes no lock and allocates nothing.
func (p *Phases) Invocation(filter, phase, outcome string, d time.Duration) {
	k := phaseKey{filter, phase}
	var h *hist
	if m := p.m.Load(); m != nil {
		h = (*m)[k]
	}
	if h == nil {
		if h = p.add(k); h == nil {
			return
		}
	}
	h.calls.Add(1)
	if p.IsError != nil && p.IsError(outcome) {
		h.errors.Add(1)
	}
	h.b[bucket(d)].Add(1)
}

func (p *Phases) add(k phaseKey) *hist {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := map[phaseKey]*hist{}
	if m := p.m.Load(); m != nil {
		if h := (*m)[k]; h != nil {
			return h
		}
		old = *m
	}
	if len(old) >= maxPhaseKeys {
		return nil
	}
	m := make(map[phaseKey]*hist, len(old)+1)
	for kk, v := range old {
		m[kk] = v
	}
	h := new(hist)
	m[k] = h
	p.m.Store(&m)
	return h
}

func bucket(d time.Duration) int {
	us := float64(d) / 1e3
	for i, ub := range bucketsUS {
		if us <= ub {
			return i
		}
	}
	return nBuckets - 1
}

// counts is one (filter, phase)'s counters at one moment.
type counts struct {
	calls, errors uint64
	b             [nBuckets]uint64
}

func (p *Phases) snapshot(filter string) map[string]counts {
	out := map[string]counts{}
	if p == nil {
		return out
	}
	m := p.m.Load()
	if m == nil {
		return out
	}
	for k, h := range *m {
		if k.filter != filter {
			continue
		}
		var c counts
		c.calls, c.errors = h.calls.Load(), h.errors.Load()
		for i := range c.b {
			c.b[i] = h.b[i].Load()
		}
		out[k.phase] = c
	}
	return out
}

// p99 is the upper bound, in milliseconds, of the bucket holding the
// 99th percentile of the calls counted in b (0 without calls; the last
// bound for calls over it).
func p99(b [nBuckets]uint64) float64 {
	var total uint64
	for _, n := range b {
		total += n
	}
	if total == 0 {
		return 0
	}
	want := uint64(math.Ceil(float64(total) * 0.99))
	var seen uint64
	for i, n := range b {
		seen += n
		if seen >= want {
			if i >= len(bucketsUS) {
				break
			}
			return bucketsUS[i] / 1e3
		}
	}
	return bucketsUS[len(bucketsUS)-1] / 1e3
}

// Sampler keeps the recent samples of every upstream and filter, taken
// when the API is asked (at most one per MinInterval), so that nothing
// runs while nobody looks. It is safe for concurrent use.
type Sampler struct {
	// MinInterval is the least time between two samples; 0 means 900 ms.
	MinInterval time.Duration

	mu   sync.Mutex
	ups  map[string]*series
	fils map[string]*series
}

// series is one upstream's or filter's last counters and recent deltas.
type series struct {
	last            time.Time
	n, fails, timed uint64
	lat             time.Duration
	deltas          []delta             // oldest first, at most KeepSamples
	phases          []map[string]counts // phase counters at each delta's start, filters only
	phaseNow        map[string]counts
}

type delta struct {
	at              time.Time
	dt              time.Duration
	n, fails, timed uint64
	lat             time.Duration
}

// staleGap is a gap between samples after which the old ones are
// dropped: the page was closed, and a minute-old rate is no "recent".
const staleGap = 30 * time.Second

// step takes a sample of s at now with the cumulative counters given;
// it reports whether one was taken.
func (s *series) step(now time.Time, every time.Duration, n, fails, timed uint64, lat time.Duration) bool {
	if s.last.IsZero() || now.Sub(s.last) > staleGap || n < s.n || fails < s.fails || timed < s.timed {
		// First sight, a long gap, or counters that went back (a new
		// generation built the handler again): start over from here.
		s.last, s.n, s.fails, s.timed, s.lat = now, n, fails, timed, lat
		s.deltas, s.phases = s.deltas[:0], s.phases[:0]
		return false
	}
	dt := now.Sub(s.last)
	if dt < every {
		return false
	}
	s.deltas = append(s.deltas, delta{at: now, dt: dt, n: n - s.n, fails: fails - s.fails, timed: timed - s.timed, lat: lat - s.lat})
	if len(s.deltas) > KeepSamples {
		s.deltas = append(s.deltas[:0], s.deltas[len(s.deltas)-KeepSamples:]...)
	}
	s.last, s.n, s.fails, s.timed, s.lat = now, n, fails, timed, lat
	return true
}

func (s *series) points() ([]Point, Recent) {
	pts := make([]Point, 0, len(s.deltas))
	var r Recent
	var timed uint64
	var lat time.Duration
	for _, d := range s.deltas {
		p := Point{At: d.at.UnixMilli(), PerSecond: round(float64(d.n) / d.dt.Seconds())}
		if d.n > 0 {
			p.ErrorRate = round(float64(d.fails) / float64(d.n))
		}
		if d.timed > 0 {
			p.LatencyMS = round(float64(d.lat) / float64(d.timed) / 1e6)
		}
		pts = append(pts, p)
		r.Seconds += d.dt.Seconds()
		r.Requests += d.n
		r.Failures += d.fails
		timed += d.timed
		lat += d.lat
	}
	r.Seconds = round(r.Seconds)
	if r.Requests > 0 {
		r.ErrorRate = round(float64(r.Failures) / float64(r.Requests))
	}
	if timed > 0 {
		r.LatencyMS = round(float64(lat) / float64(timed) / 1e6)
	}
	return pts, r
}

// round keeps three decimals: enough for a page, short in JSON.
func round(f float64) float64 { return math.Round(f*1000) / 1000 }

// Fill samples ups and fs (their counters as read now) and sets their
// Recent, Samples and, for filters, Phases. Series of upstreams and
// filters no longer listed are dropped, so what is kept is bounded by
// the config.
func (s *Sampler) Fill(now time.Time, ups []Upstream, fs []Filter, ph *Phases) {
	every := s.MinInterval
	if every <= 0 {
		every = 900 * time.Millisecond
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ups == nil {
		s.ups, s.fils = map[string]*series{}, map[string]*series{}
	}
	seen := make(map[string]bool, len(ups))
	for i := range ups {
		u := &ups[i]
		key := u.Site + "\x00" + u.Route + "\x00" + u.Address
		seen[key] = true
		sr := s.ups[key]
		if sr == nil {
			sr = &series{}
			s.ups[key] = sr
		}
		sr.step(now, every, u.Requests, u.Fails, u.Timed, u.Latency)
		u.Samples, u.Recent = sr.points()
	}
	for k := range s.ups {
		if !seen[k] {
			delete(s.ups, k)
		}
	}
	clear(seen)
	for i := range fs {
		f := &fs[i]
		seen[f.Name] = true
		sr := s.fils[f.Name]
		if sr == nil {
			sr = &series{}
			s.fils[f.Name] = sr
		}
		now0 := ph.snapshot(f.Name)
		before := sr.phaseNow
		if sr.step(now, every, f.Invocations, f.Errors, 0, 0) {
			sr.phases = append(sr.phases, before)
			if len(sr.phases) > KeepSamples {
				sr.phases = append(sr.phases[:0], sr.phases[len(sr.phases)-KeepSamples:]...)
			}
			sr.phaseNow = now0
		} else if len(sr.deltas) == 0 {
			sr.phaseNow = now0
		}
		f.Samples, f.Recent = sr.points()
		var oldest map[string]counts
		if len(sr.phases) > 0 {
			oldest = sr.phases[0]
		}
		f.Phases = phasesOf(now0, oldest)
	}
	for k := range s.fils {
		if !seen[k] {
			delete(s.fils, k)
		}
	}
}

// phasesOf lists the phases of now, with p99 over the window since
// oldest (since the start when the window saw no call).
func phasesOf(now, oldest map[string]counts) []Phase {
	out := []Phase{}
	for _, name := range []string{"request", "response"} {
		c, ok := now[name]
		if !ok {
			continue
		}
		b := c.b
		if o, ok := oldest[name]; ok {
			var w [nBuckets]uint64
			var total uint64
			for i := range w {
				w[i] = c.b[i] - o.b[i]
				total += w[i]
			}
			if total > 0 {
				b = w
			}
		}
		out = append(out, Phase{Phase: name, Calls: c.calls, Errors: c.errors, P99MS: p99(b)})
	}
	for name, c := range now { // phases the runtime may add
		if name != "request" && name != "response" {
			out = append(out, Phase{Phase: name, Calls: c.calls, Errors: c.errors, P99MS: p99(c.b)})
		}
	}
	return out
}
