package observe

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Upstream is the metrics handle of one upstream server of one proxy
// route. The proxy takes one per upstream when it is built (off the
// request path) and calls Request per attempt and SetHealthy when the
// health checks change their mind; Close when its generation retires.
// A nil *Upstream does nothing, so a proxy built without metrics needs
// no checks.
type Upstream struct {
	m        *Metrics  // nil for a handle that only feeds the access log
	addr     string    // host:port, for the access log (Tried)
	key      [2]string // upstream URL, route
	dur      prometheus.Observer
	healthy  prometheus.Gauge
	byStatus [501]atomic.Pointer[prometheus.Counter] // 100-599, then "none"
	closed   atomic.Bool
}

// Upstream returns the handle for upstream url (as written in the config)
// of the proxy on route. Handles for the same pair share their series;
// the health series goes when the last of them is closed.
func (m *Metrics) Upstream(route, url string) *Upstream {
	if m == nil {
		return nil
	}
	u := &Upstream{
		m:       m,
		addr:    upstreamAddr(url),
		key:     [2]string{url, route},
		dur:     m.upDur.WithLabelValues(url, route),
		healthy: m.upHealthy.WithLabelValues(url, route),
	}
	m.upMu.Lock()
	if m.upRefs[u.key] == 0 {
		u.healthy.Set(1) // taken until a check says otherwise
	}
	m.upRefs[u.key]++
	m.upMu.Unlock()
	return u
}

// Upstream returns the handle for upstream url of the proxy on route:
// Metrics.Upstream's, or without metrics one that only feeds the access
// log's upstream fields (Tried), or nil when neither wants the tries.
func (o *Observer) Upstream(route, url string) *Upstream {
	switch {
	case o == nil:
		return nil
	case o.Metrics != nil:
		return o.Metrics.Upstream(route, url)
	case o.AccessLog != nil && o.AccessLog.needs&needUpstream != 0:
		return &Upstream{addr: upstreamAddr(url)}
	}
	return nil
}

// Request records one attempt: the response status (0 when no response
// arrived: connection refused, timeout) and how long it took.
func (u *Upstream) Request(status int, d time.Duration) {
	if u == nil || u.m == nil {
		return
	}
	i := 500 // "none"
	if status >= 100 && status < 600 {
		i = status - 100
	}
	c := u.byStatus[i].Load()
	if c == nil {
		label := "none"
		if i < 500 {
			label = statusLabel(status)
		}
		cc := u.m.upRequests.WithLabelValues(u.key[0], u.key[1], label)
		c = &cc
		u.byStatus[i].Store(c)
	}
	(*c).Inc()
	u.dur.Observe(d.Seconds())
}

// SetHealthy records whether the upstream is taken for requests.
func (u *Upstream) SetHealthy(ok bool) {
	if u == nil || u.m == nil {
		return
	}
	if ok {
		u.healthy.Set(1)
	} else {
		u.healthy.Set(0)
	}
}

// Close releases the handle. The health series is deleted once no handle
// for the pair is open; the request counters stay, as counters should.
func (u *Upstream) Close() error {
	if u == nil || u.m == nil || u.closed.Swap(true) {
		return nil
	}
	u.m.upMu.Lock()
	defer u.m.upMu.Unlock()
	if u.m.upRefs[u.key]--; u.m.upRefs[u.key] <= 0 {
		delete(u.m.upRefs, u.key)
		u.m.upHealthy.DeleteLabelValues(u.key[0], u.key[1])
	}
	return nil
}
