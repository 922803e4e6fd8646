package proxy

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/host/internal/ascii"
)

// What the proxy tells others: per try, the upstream's observer (metrics)
// and, for sampled requests, a client span; to the upstream, the W3C trace
// context. A request that carries no span costs one context lookup and a
// few nil checks, nothing allocated.

// tracerName is the instrumentation scope of the client spans.
const tracerName = "github.com/sluicehq/sluice/host/proxy"

// Trace context headers (W3C Trace Context).
const (
	traceparentHeader = "traceparent"
	tracestateHeader  = "tracestate"
)

// spanInfo is what the client spans of one upstream share.
type spanInfo struct {
	base  string               // "http://host:port", before the path
	attrs []attribute.KeyValue // server.address, server.port
}

func newSpanInfo(t target) spanInfo {
	scheme := t.scheme
	if scheme == "h2c" {
		scheme = "http"
	}
	si := spanInfo{base: scheme + "://" + t.host}
	host, port, err := net.SplitHostPort(t.addr)
	if err != nil {
		host = t.addr
	}
	si.attrs = append(si.attrs, semconv.ServerAddress(host))
	if p, err := strconv.Atoi(port); err == nil {
		si.attrs = append(si.attrs, semconv.ServerPort(p))
	}
	return si
}

// beginTry starts one try of the request on u.
func (s *state) beginTry(u *upstream) {
	s.status = 0
	if u.obs != nil {
		s.tryStart, s.respAt = time.Now(), time.Time{}
	}
	if s.parent.IsSampled() {
		s.startSpan(u)
	}
}

// gotResponse notes the try's response status, once its headers are in.
func (s *state) gotResponse(u *upstream, status int) {
	s.status = status
	if u.obs != nil {
		s.respAt = time.Now()
	}
}

// endTry reports the try that beginTry started; err is its failure. The
// duration is until the response headers arrived, or until the failure.
func (s *state) endTry(u *upstream, err error) {
	if u.obs != nil {
		status, end := s.status, s.respAt
		if err != nil || end.IsZero() {
			status, end = 0, time.Now()
		}
		d := end.Sub(s.tryStart)
		u.obs.Request(status, d)
		if u.tried != nil {
			u.tried.Tried(s.x, status, d)
		}
		u.timed.Add(1)
		u.latency.Add(int64(d))
	}
	if s.span != nil {
		s.endSpan(err)
	}
}

var clientSpan = trace.WithSpanKind(trace.SpanKindClient)

// startSpan starts the try's client span, named by the method as the
// semantic conventions name HTTP client spans.
func (s *state) startSpan(u *upstream) {
	m := s.x.Method()
	method, known := knownMethod(m)
	name := method
	if !known {
		name, method = "HTTP", "_OTHER"
	}
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs, semconv.HTTPRequestMethodKey.String(method))
	attrs = append(attrs, u.span.attrs...)
	attrs = append(attrs, semconv.URLFull(u.span.base+string(s.uri)))
	if !known {
		attrs = append(attrs, semconv.HTTPRequestMethodOriginal(string(m)))
	}
	_, s.span = s.h.tracer.Start(s.x.Context(), name, clientSpan, trace.WithAttributes(attrs...))
}

func (s *state) endSpan(err error) {
	span := s.span
	s.span = nil
	if s.status > 0 {
		span.SetAttributes(semconv.HTTPResponseStatusCode(s.status))
	}
	switch {
	case err != nil:
		var de *dialError
		et := semconv.ErrorType(err)
		if isTimeout(err) {
			et = semconv.ErrorTypeKey.String("timeout")
		} else if errors.As(err, &de) {
			et = semconv.ErrorTypeKey.String("connect_error")
		}
		span.SetAttributes(et)
		span.SetStatus(codes.Error, err.Error())
	case s.status >= 400:
		// A client span's 4xx is an error too.
		span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(s.status)))
		span.SetStatus(codes.Error, "")
	}
	span.End()
}

// knownMethod returns the method's canonical name and true when it is one
// of RFC 9110's (and PATCH).
func knownMethod(m []byte) (string, bool) {
	switch string(m) {
	case http.MethodGet:
		return http.MethodGet, true
	case http.MethodHead:
		return http.MethodHead, true
	case http.MethodPost:
		return http.MethodPost, true
	case http.MethodPut:
		return http.MethodPut, true
	case http.MethodDelete:
		return http.MethodDelete, true
	case http.MethodConnect:
		return http.MethodConnect, true
	case http.MethodOptions:
		return http.MethodOptions, true
	case http.MethodTrace:
		return http.MethodTrace, true
	case http.MethodPatch:
		return http.MethodPatch, true
	}
	return "", false
}

// trySpanContext is the span context the try's request carries upstream:
// its client span's, or else the request's own span's.
func (s *state) trySpanContext() trace.SpanContext {
	if s.span != nil {
		return s.span.SpanContext()
	}
	return s.parent
}

// appendTraceH1 appends this try's trace context header lines to an
// HTTP/1.1 request head (the client's were not copied). Only called with
// a valid parent.
func (s *state) appendTraceH1(w []byte) []byte {
	sc := s.trySpanContext()
	w = append(w, traceparentHeader...)
	w = append(w, ": "...)
	w = appendTraceparent(w, sc)
	w = append(w, "\r\n"...)
	if ts := sc.TraceState().String(); ts != "" && cleanValue([]byte(ts)) {
		w = append(w, tracestateHeader...)
		w = append(w, ": "...)
		w = append(w, ts...)
		w = append(w, "\r\n"...)
	}
	return w
}

// injectH2 sets the trace context headers on an HTTP/2 request's header.
func (s *state) injectH2(h http.Header) {
	sc := s.trySpanContext()
	h.Set(traceparentHeader, string(appendTraceparent(s.tp[:0], sc)))
	if ts := sc.TraceState(); ts.Len() > 0 {
		h.Set(tracestateHeader, ts.String())
	}
}

const hexDigits = "0123456789abcdef"

// traceparentLen is the length of a version 00 traceparent value.
const traceparentLen = 2 + 1 + 32 + 1 + 16 + 1 + 2

// appendTraceparent appends the W3C traceparent value of sc (version 00),
// as propagation.TraceContext writes it, without allocating.
func appendTraceparent(dst []byte, sc trace.SpanContext) []byte {
	tid, sid := sc.TraceID(), sc.SpanID()
	flags := byte(sc.TraceFlags() & (trace.FlagsSampled | trace.FlagsRandom))
	dst = append(dst, "00-"...)
	for _, b := range tid {
		dst = append(dst, hexDigits[b>>4], hexDigits[b&0xf])
	}
	dst = append(dst, '-')
	for _, b := range sid {
		dst = append(dst, hexDigits[b>>4], hexDigits[b&0xf])
	}
	return append(dst, '-', hexDigits[flags>>4], hexDigits[flags&0xf])
}

// isTraceHeader reports whether k (of length 10 or 11) is tracestate or
// traceparent.
func isTraceHeader(k []byte) bool {
	return ascii.EqualFold(k, traceparentHeader) || ascii.EqualFold(k, tracestateHeader)
}

// Health, as reported to the log, the observer and its transition
// counter. The node holds the truth (down by the active checks, ejected
// by the passive ones); a transition is when the two together change
// their answer, and it is reported once, with the reason of the event
// that changed it.

// healthChanged reports the upstream's availability, if it changed since
// it was last reported: reason (a Reason constant) names the event that
// just happened, args are log attributes about it.
func (u *upstream) healthChanged(reason string, args ...any) {
	u.healthMu.Lock()
	defer u.healthMu.Unlock()
	u.healthChangedLocked(reason, args...)
}

func (u *upstream) healthChangedLocked(reason string, args ...any) {
	if u.obsClosed {
		return
	}
	ok := !u.node.Down() && !u.node.Ejected()
	if ok == u.healthy {
		return
	}
	u.healthy = ok
	to := "ejected"
	if ok {
		to = "healthy"
	}
	if u.obs != nil {
		u.obs.SetHealthy(ok)
		if t, is := u.obs.(TransitionObserver); is {
			t.Transition(to, reason)
		}
	}
	args = append([]any{"upstream", u.t.raw, "reason", reason}, args...)
	if ok {
		u.h.log.Info("proxy: upstream healthy again", args...)
	} else {
		u.h.log.Warn("proxy: upstream ejected", args...)
	}
}

// ejected reports a passive ejection (err is the failure that made it)
// and arranges for the readmission to be reported when the cool-down
// ends (nothing else would notice: the node readmits itself lazily, when
// a request asks).
func (u *upstream) ejected(err error) {
	u.healthMu.Lock()
	defer u.healthMu.Unlock()
	u.healthChangedLocked(ReasonMaxFails, "cool_down", u.h.s.coolDown, "error", err)
	if u.obsClosed {
		return
	}
	left := u.node.EjectedFor() + time.Millisecond
	if u.readmit == nil {
		u.readmit = time.AfterFunc(left, u.readmitted)
	} else {
		u.readmit.Reset(left)
	}
}

// readmitted runs when a cool-down should be over.
func (u *upstream) readmitted() {
	u.healthMu.Lock()
	defer u.healthMu.Unlock()
	if u.obsClosed {
		return
	}
	if left := u.node.EjectedFor(); left > 0 {
		// Ejected again meanwhile, or the clock moved.
		u.readmit.Reset(left + time.Millisecond)
		return
	}
	u.check.Load().Readmitted()
	u.healthChangedLocked(ReasonCoolDown)
}

// closeObserver stops health reports and closes the observer.
func (u *upstream) closeObserver() {
	u.healthMu.Lock()
	closed := u.obsClosed
	u.obsClosed = true
	if u.readmit != nil {
		u.readmit.Stop()
	}
	u.healthMu.Unlock()
	if !closed && u.obs != nil {
		_ = u.obs.Close()
	}
}
