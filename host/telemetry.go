package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/admin"
	"github.com/sluicehq/sluice/host/admin/status"
	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/gateway"
	"github.com/sluicehq/sluice/host/observe"
	"github.com/sluicehq/sluice/host/store"
	"github.com/sluicehq/sluice/host/tlsconf"
)

// telemetry is what outlives generations on the observing side: metrics,
// the tracer provider, the access log and the admin API. It is built
// once, from the first config; later reloads change routes, not
// telemetry (a changed telemetry or admin block is logged as needing a
// restart).
type telemetry struct {
	log      *slog.Logger
	metrics  *observe.Metrics   // nil unless /metrics (admin, prometheus) or OTLP metrics want it
	tracing  *observe.Tracing   // nil without a traces block
	access   *observe.AccessLog // nil without an access_log block
	otlp     otlpExport         // OTLP metrics and logs (otlp.go)
	obs      *observe.Observer
	phases   *status.Phases // filter calls by phase with latency, for the status page
	admin    *admin.Server  // nil without an admin block
	first    *config.Config
	draining atomic.Bool

	// shutdownDelay is server.shutdown_delay of the config serving now:
	// Shutdown's delay when InstanceOptions.ShutdownDelay is zero.
	shutdownDelay atomic.Int64
	// certs lists the certificates of the serving generation (set by
	// startAdmin), for the expiry metric.
	certs func() []tlsconf.Certificate
	// certEvery is how often certificate expiries are read again (files
	// reloaded, ACME certificates obtained or renewed); certKeys the
	// (site, name) pairs last reported.
	certEvery time.Duration
	certMu    sync.Mutex
	certKeys  map[[2]string]bool
	stop      chan struct{} // closed by close: stops the refresh
	stopOnce  sync.Once
	// required is the serving config's store when it says required =
	// true: /readyz asks it. nil: readiness does not depend on a store.
	required atomic.Pointer[store.Store]
}

// newTelemetry builds the telemetry a config asks for. Nothing listens
// yet: startAdmin opens the admin listener.
func newTelemetry(cfg *config.Config, log *slog.Logger) (t *telemetry, err error) {
	if log == nil {
		log = slog.Default()
	}
	t = &telemetry{log: log, first: cfg, certEvery: time.Minute, stop: make(chan struct{}),
		phases: &status.Phases{IsError: observe.ErrorOutcome}}
	t.shutdownDelay.Store(int64(cfg.Server.ShutdownDelay))
	store.SetLog(log)
	t.watchStore(cfg)
	b := currentBuild()
	log.Info("starting sluice", "version", b.Version, "commit", b.Commit, "go", b.GoVersion)
	defer func() {
		if err != nil {
			_ = t.close(context.Background())
			t = nil
		}
	}()
	tc := cfg.Telemetry
	if cfg.Admin != nil && tc.Metrics.Prometheus || tc.Metrics.Endpoint != "" {
		t.metrics = observe.NewMetrics()
		t.metrics.Registry().MustRegister(storeErrors{}, rateLimitDecisions{}, buildInfo())
	}
	if tr := tc.Traces; tr != nil {
		if t.tracing, err = observe.NewTracing(observe.TracingOptions{
			ServiceName: tc.ServiceName,
			Endpoint:    tr.Endpoint,
			Protocol:    tr.Protocol,
			Headers:     tr.Headers,
			SampleRatio: tr.SampleRatio,
		}); err != nil {
			return nil, err
		}
		// The filter runtime and anything else using the global API
		// (otel.Tracer) get the same provider and propagator.
		otel.SetTracerProvider(t.tracing.Provider())
		otel.SetTextMapPropagator(observe.Propagator)
	}
	if al := tc.AccessLog; al != nil {
		if t.access, err = observe.OpenAccessLog(observe.AccessLogOptions{Format: al.Format, Output: al.Output, Fields: al.Fields}); err != nil {
			return nil, err
		}
	}
	if t.log, err = t.startOTLP(cfg, t.log); err != nil {
		return nil, err
	}
	t.obs = &observe.Observer{Metrics: t.metrics, Tracing: t.tracing, AccessLog: t.access}
	return t, nil
}

// wrap is Deps.Wrap: metrics, a server span and an access-log line for
// every request of a route.
func (t *telemetry) wrap(site, route string, h exchange.Handler) exchange.Handler {
	return t.obs.Wrap(site, route, h)
}

// reloaded counts a reload attempt (err nil: success).
func (t *telemetry) reloaded(err error) {
	if t.metrics != nil {
		t.metrics.Reloaded(err)
	}
}

// applied notes a config that was swapped in: telemetry and admin
// settings take effect only at start, so a change is logged.
func (t *telemetry) applied(cfg *config.Config) {
	t.shutdownDelay.Store(int64(cfg.Server.ShutdownDelay))
	t.watchStore(cfg)
	t.reportCertificates()
	if !reflect.DeepEqual(redactedTelemetry(t.first), redactedTelemetry(cfg)) {
		t.log.Warn("telemetry and admin settings changed; they take effect at the next restart")
	}
}

func redactedTelemetry(c *config.Config) [2]any {
	var a *config.Admin
	if c.Admin != nil {
		cp := *c.Admin
		cp.Range = hcl.Range{}
		a = &cp
	}
	tc := c.Telemetry
	if tc.Traces != nil {
		cp := *tc.Traces
		cp.Range = hcl.Range{}
		tc.Traces = &cp
	}
	if tc.AccessLog != nil {
		cp := *tc.AccessLog
		cp.Range = hcl.Range{}
		tc.AccessLog = &cp
	}
	if tc.Logs != nil {
		cp := *tc.Logs
		cp.Range = hcl.Range{}
		tc.Logs = &cp
	}
	return [2]any{a, tc}
}

// guestLogs returns log with guest log records counted in
// sluice_filter_log_records_total; log itself without metrics.
func (t *telemetry) guestLogs(log *slog.Logger) *slog.Logger {
	if t.metrics == nil {
		return log
	}
	return slog.New(t.metrics.GuestLogs(log.Handler()))
}

// filterObserver is what the filter runtime reports invocations to
// (runtime.EngineOptions.Observer): the status page's counts, and the
// metrics when there are metrics.
func (t *telemetry) filterObserver() observe.FilterObserver {
	if t.metrics == nil {
		return t.phases
	}
	return bothObservers{t.metrics, t.phases}
}

// bothObservers tells two filter observers of each invocation.
type bothObservers [2]observe.FilterObserver

func (b bothObservers) Invocation(filter, phase, outcome string, d time.Duration) {
	b[0].Invocation(filter, phase, outcome, d)
	b[1].Invocation(filter, phase, outcome, d)
}

// tracerProvider makes the filter and upstream spans
// (runtime.EngineOptions.TracerProvider); nil without tracing.
func (t *telemetry) tracerProvider() trace.TracerProvider {
	if t.tracing == nil {
		return nil
	}
	return t.tracing.Provider()
}

// upstream returns the handle of one upstream of a proxy route, for its
// metrics and the access log's upstream fields (nil, which is valid,
// when neither wants it).
func (t *telemetry) upstream(route, url string) *observe.Upstream {
	return t.obs.Upstream(route, url)
}

// reopen reopens the access log file (SIGUSR1, after rotation).
func (t *telemetry) reopen() error {
	if t.access == nil {
		return nil
	}
	return t.access.Reopen()
}

// startAdmin opens the admin listener. o carries what the admin API asks
// of the instance (Reload, Config, Filters, Upgrade, an inherited
// Listener, and Ready, to which telemetry adds its own draining);
// telemetry fills in the listen address, token, log and metrics from the
// first config. certs lists the serving generation's certificates, for
// the expiry metric. Without an admin block it does nothing.
func (t *telemetry) startAdmin(o admin.Options, certs func() []tlsconf.Certificate) error {
	t.certs = certs
	a := t.first.Admin
	if a == nil {
		return nil
	}
	o.Listen, o.Token, o.Log = a.Listen, a.Token, t.log
	o.Unready = t.unready
	if cfg := o.Config; cfg != nil {
		o.Config = func() any { return withBuild{cfg()} }
	}
	if m, err := strconv.ParseUint(a.SocketMode, 8, 32); err == nil {
		o.SocketMode = os.FileMode(m) // checked by config
	}
	ready := o.Ready
	o.Ready = func() bool { return !t.draining.Load() && (ready == nil || ready()) }
	if t.metrics != nil && t.first.Telemetry.Metrics.Prometheus {
		o.Metrics = t.metrics.Handler()
	}
	s, err := admin.New(o)
	if err != nil {
		return err
	}
	if err := s.Start(); err != nil {
		return err
	}
	t.admin = s
	if t.metrics != nil {
		t.reportCertificates()
		go t.refreshCertificates()
	}
	return nil
}

// watchStore makes readiness depend on cfg's store when it says
// required = true. Open returns the pool the generation uses.
func (t *telemetry) watchStore(cfg *config.Config) {
	var s *store.Store
	if c := cfg.Store; c != nil && c.Required {
		s, _ = store.Open(store.Options{Address: c.Address, Username: c.Username, Password: c.Password, Prefix: c.Prefix, Timeout: c.Timeout, TLS: c.TLS})
	}
	t.required.Store(s)
}

// unready is the admin's Unready: a required store that does not answer.
func (t *telemetry) unready() string {
	if s := t.required.Load(); s != nil && !s.Check(context.Background()) {
		return "store not answering"
	}
	return ""
}

// reportCertificates sets the expiry metric of every certificate the
// serving generation has (its TLS listeners' file and ACME
// certificates). The series are reset first when the set of (site,
// name) pairs changed, so that a certificate no longer served goes.
func (t *telemetry) reportCertificates() {
	if t.metrics == nil || t.certs == nil {
		return
	}
	certs := t.certs()
	keys := make(map[[2]string]bool, len(certs))
	for _, c := range certs {
		keys[[2]string{c.Site, c.Name}] = true
	}
	t.certMu.Lock()
	defer t.certMu.Unlock()
	if !maps.Equal(keys, t.certKeys) {
		t.metrics.ResetCertificates()
		t.certKeys = keys
	}
	for _, c := range certs {
		t.metrics.SetCertificateExpiry(c.Site, c.Name, c.NotAfter)
	}
}

// refreshCertificates reports the certificates every certEvery until
// close: reloaded files and renewed ACME certificates show up without a
// config reload.
func (t *telemetry) refreshCertificates() {
	tick := time.NewTicker(t.certEvery)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
			t.reportCertificates()
		}
	}
}

// adminAddr is the admin listener's bound address ("" when none).
func (t *telemetry) adminAddr() string {
	if t.admin == nil || t.admin.Addr() == nil {
		return ""
	}
	return t.admin.Addr().String()
}

// shutdown is a graceful stop: /readyz turns 503 at once, then after
// delay (for load balancers to notice; zero means the config's
// server.shutdown_delay) drain runs, then telemetry closes (pending
// spans and log lines are flushed). ctx bounds the whole.
func (t *telemetry) shutdown(ctx context.Context, delay time.Duration, drain func(context.Context) error) error {
	t.draining.Store(true)
	if delay == 0 {
		delay = time.Duration(t.shutdownDelay.Load())
	}
	if delay > 0 {
		t.log.Info("not ready; draining after the shutdown delay", "delay", delay)
		timer := time.NewTimer(delay)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
		}
	}
	err := drain(ctx)
	return errors.Join(err, t.close(ctx))
}

// retire is shutdown for an instance a successor replaced: the admin API
// closes first (the successor serves it on the same socket), no delay.
func (t *telemetry) retire(ctx context.Context, drain func(context.Context) error) error {
	t.draining.Store(true)
	var err error
	if t.admin != nil {
		err = t.admin.Close()
	}
	err = errors.Join(err, drain(ctx))
	return errors.Join(err, t.close(ctx))
}

// adminListen is the admin listen address as configured (its handover
// name). It is the first config's: admin settings change at a restart.
func (t *telemetry) adminListen() string {
	if a := t.first.Admin; a != nil && a.Listen != "" {
		return a.Listen
	}
	return admin.DefaultListen
}

// close stops the admin API, flushes and stops tracing and the access log.
func (t *telemetry) close(ctx context.Context) error {
	t.stopOnce.Do(func() { close(t.stop) })
	var errs []error
	if t.admin != nil {
		errs = append(errs, t.admin.Close())
	}
	if t.tracing != nil {
		errs = append(errs, t.tracing.Shutdown(ctx))
	}
	if t.access != nil {
		errs = append(errs, t.access.Close())
	}
	errs = append(errs, t.otlp.close(ctx))
	return errors.Join(errs...)
}

// AdminAddr returns the admin API's bound address ("127.0.0.1:2019"), or
// "" when the config has no admin block.
func (i *Instance) AdminAddr() string { return i.tel.adminAddr() }

// ReopenLogs reopens the access log file: call it on SIGUSR1, after the
// log rotator renamed the file.
func (i *Instance) ReopenLogs() error { return i.tel.reopen() }

// Build names the running binary: sluice_build_info, the start-up log
// line and /config's "build" show it.
type Build struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
}

var running atomic.Pointer[Build]

// SetBuild records the binary's version and commit (cmd/sluice: its
// link-time flags, else what Go recorded in it); "" leaves "dev" and
// "unknown". Call it before Start.
func SetBuild(version, commit string) {
	running.Store(&Build{Version: version, Commit: commit, GoVersion: runtime.Version()})
}

func currentBuild() Build {
	b := Build{GoVersion: runtime.Version()}
	if p := running.Load(); p != nil {
		b = *p
	}
	if b.Version == "" {
		b.Version = "dev"
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	return b
}

// buildInfo is sluice_build_info: 1, labelled with the build (as
// Prometheus's own prometheus_build_info), so that a dashboard can show
// what runs where and join it to other series.
func buildInfo() prometheus.Collector {
	b := currentBuild()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "sluice_build_info",
		Help:        "The running binary: 1, labelled with its version, commit and Go version.",
		ConstLabels: prometheus.Labels{"version": b.Version, "commit": b.Commit, "goversion": b.GoVersion},
	})
	g.Set(1)
	return g
}

// withBuild is /config's value: the config with the build first.
type withBuild struct{ v any }

func (w withBuild) JSON() ([]byte, error) {
	var inner []byte
	var err error
	if j, ok := w.v.(interface{ JSON() ([]byte, error) }); ok {
		inner, err = j.JSON()
	} else {
		inner, err = json.Marshal(w.v)
	}
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(currentBuild())
	if err != nil {
		return nil, err
	}
	inner = bytes.TrimSpace(inner)
	var raw []byte
	switch {
	case len(inner) >= 2 && inner[0] == '{' && len(bytes.TrimSpace(inner[1:len(inner)-1])) == 0:
		raw = append(append([]byte(`{"build":`), b...), '}')
	case len(inner) >= 2 && inner[0] == '{':
		raw = append(append(append([]byte(`{"build":`), b...), ','), inner[1:]...)
	default:
		return inner, nil // not an object: as it is
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// storeErrors exports store.Errors as sluice_store_errors_total, one
// series per operation, all present from the start.
type storeErrors struct{}

var storeErrorsDesc = prometheus.NewDesc("sluice_store_errors_total",
	"Calls to the shared store (store \"redis\") that failed, by operation: rate_limit (the request was then decided by on_store_error), acme, ping.",
	[]string{"operation"}, nil)

func (storeErrors) Describe(ch chan<- *prometheus.Desc) { ch <- storeErrorsDesc }

func (storeErrors) Collect(ch chan<- prometheus.Metric) {
	for _, op := range store.Ops {
		ch <- prometheus.MustNewConstMetric(storeErrorsDesc, prometheus.CounterValue, float64(store.Errors(op)), op)
	}
}

// rateLimitDecisions exports gateway's counts as
// sluice_rate_limit_decisions_total: every limit that was ever built,
// every decision from zero.
type rateLimitDecisions struct{}

var rateLimitDecisionsDesc = prometheus.NewDesc("sluice_rate_limit_decisions_total",
	"Requests a rate_limit decided, by route (SITE/ROUTE) and decision: admit, refuse (429), local_admit and local_refuse (the store failed; on_store_error \"local\" decided), store_error_admit (\"allow\"), store_error_deny (\"deny\", 503).",
	[]string{"route", "decision"}, nil)

func (rateLimitDecisions) Describe(ch chan<- *prometheus.Desc) { ch <- rateLimitDecisionsDesc }

func (rateLimitDecisions) Collect(ch chan<- prometheus.Metric) {
	gateway.EachDecisionCount(func(route, decision string, n uint64) {
		ch <- prometheus.MustNewConstMetric(rateLimitDecisionsDesc, prometheus.CounterValue, float64(n), route, decision)
	})
}
