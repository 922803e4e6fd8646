package observe

import "github.com/prometheus/client_golang/prometheus"

// newTransitions is sluice_upstream_health_transitions_total: how often
// an upstream left (to="ejected") or rejoined (to="healthy") the
// rotation, and why (proxy.Reason*: active_fall, passive_max_fails,
// active_rise, cool_down_over). sluice_upstream_healthy shows the state;
// this shows the flapping a scrape interval hides.
func newTransitions() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_upstream_health_transitions_total",
		Help: "Upstreams taken out of (to=\"ejected\") or back into (to=\"healthy\") the rotation, by reason: active_fall, passive_max_fails, active_rise, cool_down_over.",
	}, []string{labelRouteUp, labelUp, "to", "reason"})
}

// Transition counts one change of the upstream's availability (it
// follows SetHealthy; see proxy.TransitionObserver).
func (u *Upstream) Transition(to, reason string) {
	if u == nil {
		return
	}
	u.m.upTransit.WithLabelValues(u.key[1], u.key[0], to, reason).Inc()
}
