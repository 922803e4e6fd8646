package observe

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Label names. The HTTP ones are the OpenTelemetry semantic-convention
// attribute names with dots turned into underscores.
const (
	labelMethod  = "http_request_method"
	labelStatus  = "http_response_status_code"
	labelServer  = "server_address"
	labelRoute   = "http_route"
	labelFilter  = "filter"
	labelPhase   = "phase"
	labelOutcome = "outcome"
	labelUp      = "upstream"
	labelRouteUp = "route"
)

// DurationBuckets are the request-duration histogram bounds in seconds:
// the OpenTelemetry HTTP semantic-convention advice.
var DurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// FilterBuckets are the filter-duration histogram bounds in seconds: a
// filter call is expected to take microseconds.
var FilterBuckets = []float64{0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1}

// SizeBuckets are the body-size histogram bounds in bytes (powers of 4
// from 64 B to 64 MiB).
var SizeBuckets = prometheus.ExponentialBuckets(64, 4, 11)

// maxFilterSeries bounds the (filter, phase, outcome) combinations kept;
// further ones are counted under filter "_other".
const maxFilterSeries = 4096

// Metrics holds sluice's Prometheus metrics in a registry of its own. One
// Metrics lives as long as the process; generations come and go under it.
// The zero value is not usable: call NewMetrics.
type Metrics struct {
	reg *prometheus.Registry

	duration *prometheus.HistogramVec
	active   *prometheus.GaugeVec
	reqSize  *prometheus.HistogramVec
	respSize *prometheus.HistogramVec

	filterCalls  *prometheus.CounterVec
	filterDur    *prometheus.HistogramVec
	filterErrors *prometheus.CounterVec
	filterMu     sync.Mutex // guards writes of filters
	filters      atomic.Pointer[map[filterKey]*filterSeries]
	guestLogs    *prometheus.CounterVec

	upRequests *prometheus.CounterVec
	upDur      *prometheus.HistogramVec
	upHealthy  *prometheus.GaugeVec
	upTransit  *prometheus.CounterVec // see Upstream.Transition
	upMu       sync.Mutex
	upRefs     map[[2]string]int

	reloads    *prometheus.CounterVec
	lastReload prometheus.Gauge
	certExpiry *prometheus.GaugeVec
}

// NewMetrics returns the metrics, registered in a new registry together
// with the Go runtime and process collectors. The last successful reload
// time starts at now (the first load).
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), upRefs: map[[2]string]int{}}
	// DESIGN.md names the route label `route`; the semantic conventions
	// name it http.route. Both carry the same value, so neither query
	// style breaks and no series is added.
	httpLabels := []string{labelMethod, labelStatus, labelServer, labelRoute, labelRouteUp}
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "http_server_request_duration_seconds",
		Help:    "Duration of HTTP server requests, until the response is committed.",
		Buckets: DurationBuckets,
	}, httpLabels)
	m.active = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "http_server_active_requests",
		Help: "Number of HTTP server requests in flight.",
	}, []string{labelMethod, labelServer})
	m.reqSize = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "http_server_request_body_size_bytes",
		Help:    "Declared size of HTTP request bodies (Content-Length; chunked bodies are not counted).",
		Buckets: SizeBuckets,
	}, httpLabels)
	m.respSize = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "http_server_response_body_size_bytes",
		Help:    "Size of HTTP response bodies (buffered length or Content-Length).",
		Buckets: SizeBuckets,
	}, httpLabels)
	filterLabels := []string{labelFilter, labelPhase, labelOutcome}
	m.filterCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_filter_invocations_total",
		Help: "Wasm filter invocations.",
	}, filterLabels)
	m.filterDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sluice_filter_duration_seconds",
		Help:    "Duration of Wasm filter invocations.",
		Buckets: FilterBuckets,
	}, filterLabels)
	m.filterErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_filter_errors_total",
		Help: "Wasm filter invocations that failed (trap, timeout, memory limit, error).",
	}, filterLabels)
	m.guestLogs = newGuestLogs()
	empty := map[filterKey]*filterSeries{}
	m.filters.Store(&empty)
	m.upRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_upstream_requests_total",
		Help: "Requests sent to upstream servers, by response status (\"none\" when no response arrived).",
	}, []string{labelUp, labelRouteUp, labelStatus})
	m.upDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sluice_upstream_request_duration_seconds",
		Help:    "Duration of upstream attempts, until the response headers arrived.",
		Buckets: DurationBuckets,
	}, []string{labelUp, labelRouteUp})
	m.upHealthy = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sluice_upstream_healthy",
		Help: "Whether an upstream is taken for requests (1) or out (0).",
	}, []string{labelUp, labelRouteUp})
	m.upTransit = newTransitions()
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_config_reloads_total",
		Help: "Config reloads by result.",
	}, []string{"result"})
	m.lastReload = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "sluice_config_last_reload_success_timestamp_seconds",
		Help: "Time of the last successful config load, in seconds since the epoch.",
	})
	m.certExpiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sluice_tls_certificate_expiry_timestamp_seconds",
		Help: "NotAfter of the certificate served for a site, in seconds since the epoch.",
	}, []string{"site", "name"})
	m.reg.MustRegister(
		m.duration, m.active, m.reqSize, m.respSize,
		m.filterCalls, m.filterDur, m.filterErrors, m.guestLogs,
		m.upRequests, m.upDur, m.upHealthy, m.upTransit,
		m.reloads, m.lastReload, m.certExpiry,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	// Both results exist from the start, so rate() and alerts see a zero.
	m.reloads.WithLabelValues("success")
	m.reloads.WithLabelValues("failure")
	m.lastReload.SetToCurrentTime()
	return m
}

// Registry returns the registry the metrics live in (to add collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text format, or in
// OpenMetrics (with exemplars) when the scraper asks for it.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		EnableOpenMetrics: true,
		Registry:          m.reg,
	})
}

// Reloaded counts a config reload: success when err is nil, else
// failure. A success also sets the last-success timestamp.
func (m *Metrics) Reloaded(err error) {
	if err != nil {
		m.reloads.WithLabelValues("failure").Inc()
		return
	}
	m.reloads.WithLabelValues("success").Inc()
	m.lastReload.SetToCurrentTime()
}

// SetCertificateExpiry records when the certificate that site serves for
// name expires.
func (m *Metrics) SetCertificateExpiry(site, name string, notAfter time.Time) {
	m.certExpiry.WithLabelValues(site, name).Set(float64(notAfter.Unix()))
}

// ResetCertificates forgets every certificate expiry, for a new
// generation to record its own.
func (m *Metrics) ResetCertificates() { m.certExpiry.Reset() }

// statusLabel returns the label value of a status code; the common codes
// come without allocating.
func statusLabel(code int) string {
	if code >= 100 && code < 600 {
		return statusStrings[code-100]
	}
	return strconv.Itoa(code)
}

var statusStrings = func() (s [500]string) {
	for i := range s {
		s[i] = strconv.Itoa(i + 100)
	}
	return s
}()
