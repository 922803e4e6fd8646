package observe

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/host/exchange"
)

type attributeKV = attribute.KeyValue

// Observer measures, traces and logs requests. Each part is optional: a
// nil Metrics, Tracing or AccessLog is skipped at Wrap time, not per
// request.
type Observer struct {
	Metrics   *Metrics
	Tracing   *Tracing
	AccessLog *AccessLog
}

// Wrap returns next measured (metrics), traced (a server span named
// "METHOD ROUTE", the W3C trace context of the request as its parent) and
// logged (access log). site is the site's configured name and route its
// configured path: they are the server_address and http_route labels.
// Label children are resolved lazily once per method and status, so the
// request path does atomic loads, not map lookups.
//
// The response is committed after the handler returns: status and headers
// are final then, except when next returns an error, which the server
// renders afterwards with the error's status (exchange.StatusOf). The
// duration is measured until the handler returns; the time to write a
// streamed or file body is not in it.
func (o *Observer) Wrap(site, route string, next exchange.Handler) exchange.Handler {
	if o == nil || (o.Metrics == nil && o.Tracing == nil && o.AccessLog == nil) {
		return next
	}
	w := &wrapped{next: next, site: site, route: route, m: o.Metrics, log: o.AccessLog}
	if o.AccessLog != nil {
		w.needs = o.AccessLog.needs
	}
	if o.Tracing != nil {
		w.tracer, w.ratio = o.Tracing.tracer, o.Tracing.ratio
	}
	for i, m := range methodNames {
		if i == methodOther {
			m = "HTTP" // the semantic conventions' name for an unknown method
		}
		w.spanNames[i] = m
		if route != "" {
			w.spanNames[i] += " " + route
		}
	}
	return w
}

type wrapped struct {
	next        exchange.Handler
	site, route string
	m           *Metrics
	tracer      trace.Tracer
	ratio       float64 // sampling ratio of root requests
	log         *AccessLog
	needs       uint8 // the log's need* bits
	spanNames   [numMethods]string
	methods     [numMethods]atomic.Pointer[methodSeries]
}

// methodSeries are the series of one (site, route, method).
type methodSeries struct {
	active   prometheus.Gauge
	byStatus [500]atomic.Pointer[statusSeries] // status 100-599
}

// statusSeries are the series of one (site, route, method, status).
type statusSeries struct {
	duration prometheus.Observer
	reqSize  prometheus.Observer
	respSize prometheus.Observer
}

func (w *wrapped) methodSeries(mi int) *methodSeries {
	if s := w.methods[mi].Load(); s != nil {
		return s
	}
	s := &methodSeries{active: w.m.active.WithLabelValues(methodNames[mi], w.site)}
	if w.methods[mi].CompareAndSwap(nil, s) {
		return s
	}
	return w.methods[mi].Load()
}

func (w *wrapped) statusSeries(mi int, ms *methodSeries, status int) *statusSeries {
	slot := (*atomic.Pointer[statusSeries])(nil)
	if status >= 100 && status < 600 {
		slot = &ms.byStatus[status-100]
		if s := slot.Load(); s != nil {
			return s
		}
	}
	labels := []string{methodNames[mi], statusLabel(status), w.site, w.route, w.route}
	s := &statusSeries{
		duration: w.m.duration.WithLabelValues(labels...),
		reqSize:  w.m.reqSize.WithLabelValues(labels...),
		respSize: w.m.respSize.WithLabelValues(labels...),
	}
	if slot != nil {
		slot.Store(s)
	}
	return s
}

var serverSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}

var noSpan trace.SpanContext

// ServeExchange starts the request's span (startSpan), runs next, then
// ends the span (endSpan), records the metrics (record) and logs the
// line (logLine), in that order, so that the log and the exemplar carry
// the span's ids.
func (w *wrapped) ServeExchange(x exchange.Exchange) error {
	start := time.Now()
	mi := methodIndex(x.Method())
	var ms *methodSeries
	if w.m != nil {
		ms = w.methodSeries(mi)
		ms.active.Inc()
	}
	if w.needs&needRequestID != 0 {
		ensureRequestID(x)
	}
	var span trace.Span
	var sc trace.SpanContext
	if w.tracer != nil {
		span, sc = w.startSpan(x, mi)
	}
	var t *tries
	if w.needs&needUpstream != 0 {
		t = &tries{Context: x.Context()}
		x.SetContext(t)
	}

	err := w.next.ServeExchange(x)

	status := x.Status()
	if err != nil {
		status = exchange.StatusOf(err)
	}
	d := time.Since(start)
	size := bodySize(x, mi, status, err)
	if span != nil {
		sc = endSpan(span, status)
	}
	if ms != nil {
		w.record(x, mi, ms, status, d, size, sc)
	}
	if w.log != nil {
		w.logLine(x, start, d, status, size, sc, t)
	}
	if err != nil {
		return observed{err} // for WrapEarly, which sees it next
	}
	return nil
}

// startSpan starts the server span of a sampled request, or gives an
// unsampled one its span context, and puts either into x's context.
// ParentBased(TraceIDRatioBased): a remote parent decides, else the
// ratio. An unsampled request starts no SDK span (its sampler, ID
// generator and span cost more than the request's own work): it gets
// fresh ids, not sampled, which still propagate to upstreams and reach
// the access log.
func (w *wrapped) startSpan(x exchange.Exchange, mi int) (trace.Span, trace.SpanContext) {
	ctx := Extract(x.Context(), x)
	parent := trace.SpanContextFromContext(ctx)
	var sample bool
	if parent.IsValid() {
		sample = parent.IsSampled()
	} else {
		sample = w.ratio >= 1 || (w.ratio > 0 && rand.Float64() < w.ratio)
	}
	if sample {
		ctx, span := w.tracer.Start(ctx, w.spanNames[mi], serverSpan...)
		w.startAttributes(span, x)
		if w.needs&needRequestID != 0 {
			span.SetAttributes(attribute.StringSlice("http.request.header.x-request-id",
				[]string{string(x.RequestHeader(requestIDHeader))}))
		}
		x.SetContext(ctx)
		return span, trace.SpanContext{}
	}
	sc := unsampled(parent)
	x.SetContext(trace.ContextWithSpanContext(ctx, sc))
	return nil, sc
}

// endSpan sets the response attributes of span, ends it and returns its
// span context.
func endSpan(span trace.Span, status int) trace.SpanContext {
	sc := span.SpanContext()
	if span.IsRecording() {
		span.SetAttributes(semconv.HTTPResponseStatusCode(status))
		if status >= 500 {
			span.SetAttributes(attribute.String("error.type", statusLabel(status)))
			span.SetStatus(codes.Error, "")
		}
	}
	span.End()
	return sc
}

// record observes the request's duration (with the span's ids as the
// exemplar when sampled) and sizes, and ends its count as active.
func (w *wrapped) record(x exchange.Exchange, mi int, ms *methodSeries, status int, d time.Duration, size int64, sc trace.SpanContext) {
	ss := w.statusSeries(mi, ms, status)
	if sc.IsSampled() {
		ss.duration.(prometheus.ExemplarObserver).ObserveWithExemplar(d.Seconds(),
			prometheus.Labels{"trace_id": sc.TraceID().String(), "span_id": sc.SpanID().String()})
	} else {
		ss.duration.Observe(d.Seconds())
	}
	if n := x.ContentLength(); n >= 0 {
		ss.reqSize.Observe(float64(n))
	}
	ss.respSize.Observe(float64(size))
	ms.active.Dec()
}

// logLine writes the request's access log line. With tracing off, the
// trace id is the one the request's traceparent carried, so that a line
// can be found from a trace whether or not sluice takes part in it.
func (w *wrapped) logLine(x exchange.Exchange, start time.Time, d time.Duration, status int, size int64, sc trace.SpanContext, t *tries) {
	e := Entry{
		Time: start, Duration: d, Remote: x.RemoteAddr(),
		Method: x.Method(), URI: x.RequestURI(), Proto: x.Proto(),
		Status: status, Bytes: size, Host: x.Host(),
		UserAgent: x.RequestHeader("User-Agent"), Referer: x.RequestHeader("Referer"),
		Site: w.site, Route: w.route,
	}
	switch {
	case sc.IsValid():
		e.TraceID, e.SpanID = sc.TraceID(), sc.SpanID()
	case w.tracer == nil:
		e.TraceID = traceparentID(x.RequestHeader("traceparent"))
	}
	if w.needs&needRequestID != 0 {
		e.RequestID = x.RequestHeader(requestIDHeader)
	}
	if w.needs&needConsumer != 0 {
		e.Consumer = x.RequestHeader(consumerHeader)
	}
	if w.needs&needTLS != 0 {
		e.TLS = exchange.TLSState(x)
	}
	if t != nil {
		e.UpstreamAddr, e.UpstreamStatus, e.UpstreamDuration = t.last()
	}
	w.log.Log(&e)
}

// unsampled returns the span context of a request that is not sampled:
// a new span of the remote parent's trace, or of a new trace.
func unsampled(parent trace.SpanContext) trace.SpanContext {
	var cfg trace.SpanContextConfig
	if parent.IsValid() {
		cfg.TraceID, cfg.TraceState = parent.TraceID(), parent.TraceState()
	} else {
		binary.BigEndian.PutUint64(cfg.TraceID[:8], rand.Uint64())
		binary.BigEndian.PutUint64(cfg.TraceID[8:], rand.Uint64()|1)
	}
	binary.BigEndian.PutUint64(cfg.SpanID[:], rand.Uint64()|1)
	return trace.NewSpanContext(cfg)
}

// startAttributes sets the request attributes of a recording span; only
// sampled requests pay for them.
func (w *wrapped) startAttributes(span trace.Span, x exchange.Exchange) {
	attrs := make([]attribute.KeyValue, 0, 9)
	attrs = append(attrs,
		semconv.HTTPRequestMethodKey.String(methodNames[methodIndex(x.Method())]),
		semconv.URLPath(string(x.Path())),
		semconv.HTTPRoute(w.route),
		semconv.ServerAddress(w.site),
		semconv.NetworkProtocolVersion(protoVersion(x.Proto())),
	)
	if mi := methodIndex(x.Method()); mi == methodOther {
		attrs = append(attrs, semconv.HTTPRequestMethodOriginal(string(x.Method())))
	}
	if q := x.Query(); len(q) > 0 {
		attrs = append(attrs, semconv.URLQuery(string(q)))
	}
	if x.IsTLS() {
		attrs = append(attrs, semconv.URLScheme("https"))
	} else {
		attrs = append(attrs, semconv.URLScheme("http"))
	}
	if ip, port := addrParts(x.RemoteAddr()); ip != "" {
		attrs = append(attrs, semconv.ClientAddress(ip), semconv.ClientPort(port))
	}
	if exchange.PeerTrusted(x) { // the client came through a trusted proxy: the peer too
		if ip, port := addrParts(exchange.Peer(x)); ip != "" {
			attrs = append(attrs, semconv.NetworkPeerAddress(ip), semconv.NetworkPeerPort(port))
		}
	}
	if ua := x.RequestHeader("User-Agent"); len(ua) > 0 {
		attrs = append(attrs, semconv.UserAgentOriginal(string(ua)))
	}
	span.SetAttributes(attrs...)
}

func protoVersion(p string) string {
	switch p {
	case "HTTP/1.1":
		return "1.1"
	case "HTTP/2.0":
		return "2"
	case "HTTP/1.0":
		return "1.0"
	case "HTTP/3.0", "HTTP/3":
		return "3"
	}
	return p
}

func addrParts(a net.Addr) (string, int) {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.IP.String(), a.Port
	case nil:
		return "", 0
	}
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String(), 0
	}
	n, _ := strconv.Atoi(port)
	return host, n
}

// bodySize is the number of body bytes the response sends: none for
// HEAD and for statuses without a body; the page the server renders for
// an error (errorBodySize); else the buffered body's length or the
// Content-Length header's (files and streams), else 0.
func bodySize(x exchange.Exchange, mi, status int, err error) int64 {
	if mi == methodHEAD || status < 200 || status == 204 || status == 304 {
		return 0
	}
	if err != nil {
		return errorBodySize(err, status)
	}
	return responseSize(x)
}

// responseSize is the body length: the buffered body's, else the
// Content-Length header's (files and streams), else 0.
func responseSize(x exchange.Exchange) int64 {
	if b := x.ResponseBody(); b != nil {
		return int64(len(b))
	}
	cl := x.ResponseHeader("Content-Length")
	var n int64
	for _, c := range cl {
		if c < '0' || c > '9' || n > (1<<62)/10 {
			return 0
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

// Methods known to the semantic conventions; others fold into "_OTHER".
const (
	methodOther = iota
	methodGET
	methodHEAD
	methodPOST
	methodPUT
	methodDELETE
	methodCONNECT
	methodOPTIONS
	methodTRACE
	methodPATCH
	numMethods
)

var methodNames = [numMethods]string{"_OTHER", "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}

// methodIndex folds a method; the switch on string(m) does not allocate.
func methodIndex(m []byte) int {
	switch string(m) {
	case "GET":
		return methodGET
	case "HEAD":
		return methodHEAD
	case "POST":
		return methodPOST
	case "PUT":
		return methodPUT
	case "DELETE":
		return methodDELETE
	case "CONNECT":
		return methodCONNECT
	case "OPTIONS":
		return methodOPTIONS
	case "TRACE":
		return methodTRACE
	case "PATCH":
		return methodPATCH
	}
	return methodOther
}
