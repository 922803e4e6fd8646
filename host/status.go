package host

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/admin/status"
	"github.com/sluicehq/sluice/host/generation"
	"github.com/sluicehq/sluice/host/proxy"
	"github.com/sluicehq/sluice/host/respond"
	"github.com/sluicehq/sluice/host/static"
	"github.com/sluicehq/sluice/host/store"
	"github.com/sluicehq/sluice/host/tlsconf"
	"github.com/sluicehq/sluice/runtime"
)

// expiringSoon is when a certificate shows as "expiring" on the status
// page: ACME renews at 30 days left, so 14 means renewal is failing.
const expiringSoon = 14 * 24 * time.Hour

// Status is the live state of the instance, for the admin's /status,
// /upstreams and status page: read from the serving generation (its
// config, proxies, filters and certificates), with the recent samples
// the instance's sampler keeps. It runs off the request path.
func (i *Instance) Status() *status.Status {
	now := time.Now()
	b := currentBuild()
	st := &status.Status{
		Build:         status.Build(b),
		StartedAt:     i.started,
		UptimeSeconds: now.Sub(i.started).Round(time.Millisecond).Seconds(),
		Now:           now,
		Draining:      i.srv.Draining() || i.tel.draining.Load(),
		Generation:    i.reloads.Generation(),
		Listeners:     []status.Listener{},
		Sites:         []status.Site{},
		Upstreams:     []status.Upstream{},
		Filters:       []status.Filter{},
		Certificates:  []status.Certificate{},
	}
	cfg := i.Config()
	g := i.srv.Current()
	if cfg == nil || g == nil {
		return st
	}
	for _, l := range cfg.Listeners {
		sl := status.Listener{Address: l.Address, TLS: l.TLS, HTTP3: l.HTTP3, Sites: l.Sites}
		if sl.Sites == nil {
			sl.Sites = []string{}
		}
		if a := i.srv.Addr(l.Address); a != nil {
			sl.Bound = a.String()
		}
		st.Listeners = append(st.Listeners, sl)
	}
	for _, s := range cfg.Sites {
		st.Sites = append(st.Sites, siteStatus(s))
	}
	for _, p := range g.Proxies {
		st.Upstreams = append(st.Upstreams, upstreamStatus(p.Site, p.Route, p.Handler)...)
	}
	st.Filters = filterStatus(i.FilterStats())
	i.sampler.Fill(now, st.Upstreams, st.Filters, i.tel.phases)
	st.Certificates = certificateStatus(cfg, i.certs.get(g, now), now)
	st.Store = storeStatus(cfg)
	return st
}

// certEvery is how long the status page reuses a read of the
// certificates: reading them reads ACME storage (files, or the shared
// store), which a page polling every second need not do each time.
const certEvery = 10 * time.Second

// certCache is the last read of a generation's certificates.
type certCache struct {
	mu    sync.Mutex
	gen   *generation.Generation
	at    time.Time
	certs []tlsconf.Certificate
}

func (c *certCache) get(g *generation.Generation, now time.Time) []tlsconf.Certificate {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != g || now.Sub(c.at) >= certEvery || now.Before(c.at) {
		c.gen, c.at, c.certs = g, now, g.Certificates()
	}
	return c.certs
}

func siteStatus(s *config.Site) status.Site {
	ss := status.Site{Name: s.Name, Aliases: s.Aliases, Listen: s.Listen, TLS: "none", Routes: []status.Route{}}
	if ss.Listen == nil {
		ss.Listen = []string{}
	}
	if t := s.TLS; t != nil {
		ss.TLS = "file"
		if t.ACME != nil {
			ss.TLS = "acme"
		}
	}
	for _, r := range s.Routes {
		sr := status.Route{Path: r.Path, Handler: r.Kind, Filters: r.Filters}
		if sr.Filters == nil {
			sr.Filters = []string{}
		}
		switch o := r.Handler().(type) {
		case *proxy.Options:
			urls := make([]string, 0, len(o.Upstreams))
			for _, u := range o.Upstreams {
				urls = append(urls, u.URL)
			}
			sr.Target = strings.Join(urls, ", ")
		case *static.Block:
			sr.Target = o.Root
		case *respond.Options:
			sr.Target = fmt.Sprint(o.Status)
		}
		if len(r.Allow) > 0 || len(r.Deny) > 0 {
			sr.Layers = append(sr.Layers, "acl")
		}
		if _, ok := r.Blocks["rate_limit"]; ok {
			sr.Layers = append(sr.Layers, "rate_limit")
		}
		ss.Routes = append(ss.Routes, sr)
	}
	return ss
}

// upstreamStatus reads one proxy route's upstreams, and says why each
// one that takes no traffic is out.
func upstreamStatus(site, route string, h *proxy.Handler) []status.Upstream {
	maxFails, coolDown := h.Passive()
	check := h.HealthPath()
	var out []status.Upstream
	for _, u := range h.Stats() {
		su := status.Upstream{Site: site, Route: route, Address: u.URL, Healthy: u.Healthy,
			Down: u.Down, Ejected: u.Ejected, InFlight: u.InFlight, Requests: u.Requests, Fails: u.Failures,
			LastError: u.LastError, Timed: u.Timed, Latency: u.Latency, Samples: []status.Point{}}
		switch {
		case u.Down:
			su.Reason = fmt.Sprintf("active health check GET %s failing", check)
		case u.Ejected:
			su.EjectedForSeconds = u.EjectedFor.Round(time.Millisecond).Seconds()
			su.Reason = fmt.Sprintf("passive_health: max_fails = %d reached; out for %s", maxFails, coolDown)
			if u.LastError != "" {
				su.Reason += "; last error: " + u.LastError
			}
		}
		out = append(out, su)
	}
	return out
}

// filterStatus is the filters' runtime stats in the API's shape
// (snake_case, a never-swapped filter without last_swap).
func filterStatus(fs []runtime.FilterStats) []status.Filter {
	out := make([]status.Filter, 0, len(fs))
	for _, f := range fs {
		out = append(out, status.Filter{Name: f.Name, Digest: f.Digest, PoolSize: f.PoolSize, Live: f.Live, InUse: f.InUse,
			Invocations: f.Invocations, Errors: f.Errors, Swaps: f.Swaps, SwapErrors: f.SwapErrors,
			LastSwap: status.Time(f.LastSwap), StartUps: f.StartUps, Restores: f.Restores, Resets: f.Resets,
			Phases: []status.Phase{}, Samples: []status.Point{}})
	}
	return out
}

// certificateStatus lists the TLS sites' certificates; an ACME site
// with none yet shows as pending.
func certificateStatus(cfg *config.Config, certs []tlsconf.Certificate, now time.Time) []status.Certificate {
	out := []status.Certificate{}
	for _, s := range cfg.Sites {
		if s.TLS == nil {
			continue
		}
		source, dir := "file", ""
		if a := s.TLS.ACME; a != nil {
			source, dir = "acme", a.Directory
			if dir == "" {
				dir = config.DefaultACMEDirectory
			}
		}
		found := false
		for _, c := range certs {
			if c.Site != s.Name {
				continue
			}
			found = true
			left := c.NotAfter.Sub(now)
			days := float64(left.Round(time.Hour)) / float64(24*time.Hour)
			state := "valid"
			switch {
			case left <= 0:
				state = "expired"
			case left < expiringSoon:
				state = "expiring"
			}
			out = append(out, status.Certificate{Site: s.Name, Name: c.Name, Source: source, State: state,
				NotAfter: status.Time(c.NotAfter), DaysLeft: &days, ACMEIssuer: dir})
		}
		if !found {
			state := "pending"
			if source == "file" {
				state = "unreadable"
			}
			out = append(out, status.Certificate{Site: s.Name, Source: source, State: state, ACMEIssuer: dir})
		}
	}
	slices.SortStableFunc(out, func(a, b status.Certificate) int { return strings.Compare(a.Site, b.Site) })
	return out
}

// storeStatus is the config's store as its calls found it (Open
// returns the pool the generation uses; it does not connect).
func storeStatus(cfg *config.Config) *status.Store {
	c := cfg.Store
	if c == nil {
		return nil
	}
	s, err := store.Open(store.Options{Address: c.Address, Username: c.Username, Password: c.Password, Prefix: c.Prefix, Timeout: c.Timeout, TLS: c.TLS})
	if err != nil {
		return &status.Store{Address: c.Address, State: "unknown", Required: c.Required, Errors: map[string]uint64{}}
	}
	state, since := s.State()
	st := &status.Store{Address: s.Address(), State: state, DownSince: status.Time(since), Required: c.Required, Errors: map[string]uint64{}}
	for _, op := range store.Ops {
		st.Errors[op] = store.Errors(op)
	}
	return st
}
