package observe

import "testing"

func TestUpstreamTransitions(t *testing.T) {
	m := NewMetrics()
	u := m.Upstream("site/api", "http://127.0.0.1:9001")
	u.Transition("ejected", "passive_max_fails")
	u.Transition("healthy", "active_rise")
	u.Transition("ejected", "passive_max_fails")
	lbl := func(to, reason string) map[string]string {
		return map[string]string{"route": "site/api", "upstream": "http://127.0.0.1:9001", "to": to, "reason": reason}
	}
	for _, c := range []struct {
		to, reason string
		want       float64
	}{{"ejected", "passive_max_fails", 2}, {"healthy", "active_rise", 1}} {
		if s := series(t, m, "sluice_upstream_health_transitions_total", lbl(c.to, c.reason)); s.GetCounter().GetValue() != c.want {
			t.Errorf("%s/%s = %v, want %v", c.to, c.reason, s, c.want)
		}
	}
	var nilU *Upstream
	nilU.Transition("ejected", "active_fall") // a proxy without metrics
}
