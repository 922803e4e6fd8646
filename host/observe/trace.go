package observe

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/host/exchange"
)

// TracingOptions configure NewTracing.
type TracingOptions struct {
	// ServiceName is the service.name resource attribute; "" means "sluice".
	ServiceName string
	// Version is the service.version resource attribute; "" leaves it out.
	Version string
	// Endpoint is the OTLP collector's base URL ("http://127.0.0.1:4318"
	// for HTTP, "http://127.0.0.1:4317" for gRPC). For HTTP, "/v1/traces"
	// is appended unless the path already ends with it. An http:// URL
	// means no TLS. Ignored when Exporter is set.
	Endpoint string
	// Protocol is "http/protobuf" (the default when "") or "grpc".
	Protocol string
	// Headers are sent with every export.
	Headers map[string]string
	// SampleRatio is the fraction of root traces sampled (0 to 1); a
	// parent's decision, from traceparent, is always honoured.
	SampleRatio float64
	// Exporter, when set, receives the spans instead of an OTLP exporter
	// (tests).
	Exporter sdktrace.SpanExporter
	// BatchTimeout is the longest a span waits before export; 0 means the
	// SDK's default (5s).
	BatchTimeout time.Duration
}

// Tracing is the process's tracer provider: one per process, outliving
// generations.
type Tracing struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	ratio  float64 // root sampling ratio, decided in Wrap
}

// NewTracing builds the tracer provider: a batching OTLP exporter, with
// the sampling of ParentBased(TraceIDRatioBased(SampleRatio)). The root
// decision is taken in Wrap before any span exists, so that an unsampled
// request costs no span at all; the provider's own sampler is
// ParentBased(AlwaysSample) for the spans Wrap does start and their
// children (filters, upstream attempts). Nothing is dialled until the
// first export.
func NewTracing(o TracingOptions) (*Tracing, error) {
	exp := o.Exporter
	if exp == nil {
		var err error
		if exp, err = newExporter(o); err != nil {
			return nil, err
		}
	}
	name := o.ServiceName
	if name == "" {
		name = "sluice"
	}
	attrs := []attributeKV{semconv.ServiceName(name)}
	if o.Version != "" {
		attrs = append(attrs, semconv.ServiceVersion(o.Version))
	}
	res := resource.NewWithAttributes(semconv.SchemaURL, attrs...)
	var bopts []sdktrace.BatchSpanProcessorOption
	if o.BatchTimeout > 0 {
		bopts = append(bopts, sdktrace.WithBatchTimeout(o.BatchTimeout))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())),
		sdktrace.WithBatcher(exp, bopts...),
		sdktrace.WithResource(res),
	)
	return &Tracing{tp: tp, tracer: tp.Tracer("github.com/sluicehq/sluice/host"), ratio: o.SampleRatio}, nil
}

func newExporter(o TracingOptions) (sdktrace.SpanExporter, error) {
	u, err := url.Parse(o.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		// The endpoint is not quoted: its user info or query may hold a key.
		return nil, fmt.Errorf("traces: endpoint: want http://HOST:PORT or https://HOST:PORT")
	}
	ctx := context.Background()
	switch o.Protocol {
	case "", "http/protobuf", "http":
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(u.Host)}
		p := strings.TrimSuffix(u.Path, "/")
		if !strings.HasSuffix(p, "/v1/traces") {
			p += "/v1/traces"
		}
		opts = append(opts, otlptracehttp.WithURLPath(p))
		if u.Scheme == "http" {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		if len(o.Headers) > 0 {
			opts = append(opts, otlptracehttp.WithHeaders(o.Headers))
		}
		return otlptracehttp.New(ctx, opts...)
	case "grpc":
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(u.Host)}
		if u.Scheme == "http" {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		if len(o.Headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(o.Headers))
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	return nil, fmt.Errorf("traces: protocol %q: want \"http/protobuf\" or \"grpc\"", o.Protocol)
}

// Provider returns the tracer provider, for the filter runtime's spans
// and the proxy's client spans.
func (t *Tracing) Provider() trace.TracerProvider { return t.tp }

// ForceFlush exports every finished span now.
func (t *Tracing) ForceFlush(ctx context.Context) error { return t.tp.ForceFlush(ctx) }

// Shutdown exports what is pending and stops the provider.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	err := t.tp.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("traces: shutdown: %w", err)
	}
	return err
}

// Propagator is the W3C trace-context propagator sluice reads and writes.
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Inject writes the trace context of ctx (traceparent, tracestate) with
// setHeader: the proxy calls it for every upstream request. Without a
// span in ctx it writes nothing.
func Inject(ctx context.Context, setHeader func(k, v string)) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	Propagator.Inject(ctx, setCarrier(setHeader))
}

// setCarrier adapts a header setter to a TextMapCarrier; a func value
// fits in an interface without allocating.
type setCarrier func(k, v string)

func (f setCarrier) Get(string) string { return "" }
func (f setCarrier) Set(k, v string)   { f(k, v) }
func (f setCarrier) Keys() []string    { return nil }

// requestCarrier reads the trace context from request headers.
type requestCarrier struct{ x exchange.Exchange }

func (c requestCarrier) Get(k string) string { return string(c.x.RequestHeader(k)) }
func (c requestCarrier) Set(string, string)  {}
func (c requestCarrier) Keys() []string      { return []string{"traceparent", "tracestate"} }

// Extract returns ctx with the remote span context of x's traceparent
// header, when it has one.
func Extract(ctx context.Context, x exchange.Exchange) context.Context {
	if x.RequestHeader("traceparent") == nil {
		return ctx
	}
	return Propagator.Extract(ctx, requestCarrier{x})
}
