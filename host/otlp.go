package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/bridges/otelslog"
	promotel "go.opentelemetry.io/contrib/bridges/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/config"
)

// OTLP export of metrics and logs, beside the traces of observe.Tracing,
// configured the same way (endpoint, protocol, headers). Like the tracer
// provider, both providers are built once, from the first config, and
// outlive generations.
//
// Metrics are not instrumented twice: the OTLP reader gathers the same
// Prometheus registry /metrics serves (through the Prometheus bridge),
// so the two never disagree. Logs: every record of sluice's own logger
// goes where it went and, at the configured level or above, to the
// collector as well (the slog bridge), with its attributes.

// otlpExport holds the providers; each is nil when not configured.
type otlpExport struct {
	meters *sdkmetric.MeterProvider
	logs   *sdklog.LoggerProvider
}

// otlpResource names the service as the traces do.
func otlpResource(name string) *resource.Resource {
	if name == "" {
		name = "sluice"
	}
	return resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(name), semconv.ServiceVersion(currentBuild().Version))
}

// otlpTarget checks an endpoint and returns its host and the URL path for
// signal ("metrics", "logs"), as the traces exporter derives its own:
// "http://collector:4318" exports to /v1/metrics; a path that already
// ends in /v1/metrics is kept.
func otlpTarget(endpoint, signal string) (host, path string, insecure bool, err error) {
	u, perr := url.Parse(endpoint)
	if perr != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		// The endpoint is not quoted: its user info or query may hold a key.
		return "", "", false, fmt.Errorf("%s: endpoint: want http://HOST:PORT or https://HOST:PORT", signal)
	}
	p := strings.TrimSuffix(u.Path, "/")
	if !strings.HasSuffix(p, "/v1/"+signal) {
		p += "/v1/" + signal
	}
	return u.Host, p, u.Scheme == "http", nil
}

// newMeterProvider pushes reg's metrics every m.Interval to m.Endpoint.
func newMeterProvider(m config.Metrics, service string, reg prometheus.Gatherer) (*sdkmetric.MeterProvider, error) {
	host, path, insecure, err := otlpTarget(m.Endpoint, "metrics")
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	var exp sdkmetric.Exporter
	switch m.Protocol {
	case "", "http/protobuf":
		opts := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpoint(host), otlpmetrichttp.WithURLPath(path)}
		if insecure {
			opts = append(opts, otlpmetrichttp.WithInsecure())
		}
		if len(m.Headers) > 0 {
			opts = append(opts, otlpmetrichttp.WithHeaders(m.Headers))
		}
		exp, err = otlpmetrichttp.New(ctx, opts...)
	case "grpc":
		opts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithEndpoint(host)}
		if insecure {
			opts = append(opts, otlpmetricgrpc.WithInsecure())
		}
		if len(m.Headers) > 0 {
			opts = append(opts, otlpmetricgrpc.WithHeaders(m.Headers))
		}
		exp, err = otlpmetricgrpc.New(ctx, opts...)
	default:
		return nil, fmt.Errorf("metrics: protocol %q: want \"http/protobuf\" or \"grpc\"", m.Protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("metrics: otlp exporter: %w", err)
	}
	every := m.Interval
	if every <= 0 {
		every = time.Minute
	}
	r := sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(every),
		sdkmetric.WithProducer(promotel.NewMetricProducer(promotel.WithGatherer(reg))))
	return sdkmetric.NewMeterProvider(sdkmetric.WithReader(r), sdkmetric.WithResource(otlpResource(service))), nil
}

// newLoggerProvider exports log records in batches to l.Endpoint.
func newLoggerProvider(l *config.Logs, service string) (*sdklog.LoggerProvider, error) {
	host, path, insecure, err := otlpTarget(l.Endpoint, "logs")
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	var exp sdklog.Exporter
	switch l.Protocol {
	case "", "http/protobuf":
		opts := []otlploghttp.Option{otlploghttp.WithEndpoint(host), otlploghttp.WithURLPath(path)}
		if insecure {
			opts = append(opts, otlploghttp.WithInsecure())
		}
		if len(l.Headers) > 0 {
			opts = append(opts, otlploghttp.WithHeaders(l.Headers))
		}
		exp, err = otlploghttp.New(ctx, opts...)
	case "grpc":
		opts := []otlploggrpc.Option{otlploggrpc.WithEndpoint(host)}
		if insecure {
			opts = append(opts, otlploggrpc.WithInsecure())
		}
		if len(l.Headers) > 0 {
			opts = append(opts, otlploggrpc.WithHeaders(l.Headers))
		}
		exp, err = otlploggrpc.New(ctx, opts...)
	default:
		return nil, fmt.Errorf("logs: protocol %q: want \"http/protobuf\" or \"grpc\"", l.Protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("logs: otlp exporter: %w", err)
	}
	return sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewBatchProcessor(exp)),
		sdklog.WithResource(otlpResource(service))), nil
}

// startOTLP builds what cfg's metrics and logs blocks ask for. metrics
// is the registry to export (nil without one); log is sluice's logger,
// returned teed to the collector when logs are exported.
func (t *telemetry) startOTLP(cfg *config.Config, log *slog.Logger) (*slog.Logger, error) {
	tc := cfg.Telemetry
	if tc.Metrics.Endpoint != "" && t.metrics != nil {
		mp, err := newMeterProvider(tc.Metrics, tc.ServiceName, t.metrics.Registry())
		if err != nil {
			return log, err
		}
		t.otlp.meters = mp
		// Anything using the global API (otel.Meter) exports the same way.
		otel.SetMeterProvider(mp)
	}
	if l := tc.Logs; l != nil {
		lp, err := newLoggerProvider(l, tc.ServiceName)
		if err != nil {
			return log, err
		}
		t.otlp.logs = lp
		var min slog.Level
		if err := min.UnmarshalText([]byte(l.Level)); err != nil {
			min = slog.LevelInfo
		}
		h := otelslog.NewHandler("github.com/sluicehq/sluice", otelslog.WithLoggerProvider(lp), otelslog.WithVersion(currentBuild().Version))
		log = slog.New(tee{log.Handler(), leveled{h, min}})
	}
	return log, nil
}

// close flushes and stops the providers; ctx bounds it.
func (o *otlpExport) close(ctx context.Context) error {
	var errs []error
	if o.meters != nil {
		errs = append(errs, o.meters.Shutdown(ctx))
	}
	if o.logs != nil {
		errs = append(errs, o.logs.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// tee hands every record to both handlers, each by its own level.
type tee [2]slog.Handler

func (t tee) Enabled(ctx context.Context, l slog.Level) bool {
	return t[0].Enabled(ctx, l) || t[1].Enabled(ctx, l)
}

func (t tee) Handle(ctx context.Context, r slog.Record) error {
	var errs [2]error
	for i, h := range t {
		if h.Enabled(ctx, r.Level) {
			errs[i] = h.Handle(ctx, r.Clone())
		}
	}
	return errors.Join(errs[0], errs[1])
}

func (t tee) WithAttrs(as []slog.Attr) slog.Handler {
	return tee{t[0].WithAttrs(as), t[1].WithAttrs(as)}
}

func (t tee) WithGroup(name string) slog.Handler {
	return tee{t[0].WithGroup(name), t[1].WithGroup(name)}
}

// leveled passes records at min or above.
type leveled struct {
	h   slog.Handler
	min slog.Level
}

func (l leveled) Enabled(ctx context.Context, lv slog.Level) bool {
	return lv >= l.min && l.h.Enabled(ctx, lv)
}
func (l leveled) Handle(ctx context.Context, r slog.Record) error { return l.h.Handle(ctx, r) }
func (l leveled) WithAttrs(as []slog.Attr) slog.Handler           { return leveled{l.h.WithAttrs(as), l.min} }
func (l leveled) WithGroup(name string) slog.Handler              { return leveled{l.h.WithGroup(name), l.min} }
