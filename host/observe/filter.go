package observe

import "time"

// FilterObserver receives one report per Wasm filter invocation. Its
// method set is runtime.Observer's; observe does not import runtime, so
// the two are kept equal by hand (and by a compile-time check in host).
type FilterObserver interface {
	Invocation(filter, phase, outcome string, d time.Duration)
}

type filterKey struct{ filter, phase, outcome string }

type filterSeries struct {
	calls  interface{ Inc() }
	dur    interface{ Observe(float64) }
	errors interface{ Inc() } // nil for outcomes that are not failures
}

// ErrorOutcome reports whether a filter outcome counts as an error in
// sluice_filter_errors_total: the runtime's failure outcomes "trap",
// "timeout", "memory", "overload" and "error". "ok" and "answered" (the
// filter answered the request itself) are not errors, nor are
// "buffer_limit" (a body the filter read was over its max_buffer) and
// "body_timeout" (a body it read came too slowly): the client or the
// upstream failed there, and sluice_filter_invocations_total counts them.
func ErrorOutcome(outcome string) bool {
	switch outcome {
	case "trap", "timeout", "memory", "overload", "error":
		return true
	}
	return false
}

// Invocation records one filter call: it counts it, observes its duration
// and, for a failure outcome, counts an error. It is safe for concurrent
// use; after the first call for a (filter, phase, outcome) it does one
// map read and no allocation.
func (m *Metrics) Invocation(filter, phase, outcome string, d time.Duration) {
	k := filterKey{filter, phase, outcome}
	s := (*m.filters.Load())[k]
	if s == nil {
		s = m.filterSeries(k)
	}
	s.calls.Inc()
	s.dur.Observe(d.Seconds())
	if s.errors != nil {
		s.errors.Inc()
	}
}

// filterSeries resolves the series of k, copying the map on write so that
// readers never lock.
func (m *Metrics) filterSeries(k filterKey) *filterSeries {
	m.filterMu.Lock()
	defer m.filterMu.Unlock()
	old := *m.filters.Load()
	if s := old[k]; s != nil {
		return s
	}
	lk := k
	if len(old) >= maxFilterSeries {
		lk.filter = "_other"
		if s := old[lk]; s != nil {
			return s
		}
	}
	s := &filterSeries{
		calls: m.filterCalls.WithLabelValues(lk.filter, lk.phase, lk.outcome),
		dur:   m.filterDur.WithLabelValues(lk.filter, lk.phase, lk.outcome),
	}
	if ErrorOutcome(lk.outcome) {
		s.errors = m.filterErrors.WithLabelValues(lk.filter, lk.phase, lk.outcome)
	}
	next := make(map[filterKey]*filterSeries, len(old)+1)
	for kk, v := range old {
		next[kk] = v
	}
	next[lk] = s
	m.filters.Store(&next)
	return s
}

var _ FilterObserver = (*Metrics)(nil)
