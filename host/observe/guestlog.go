package observe

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// GuestLogs wraps h so that every record a filter's guest logged through
// the ABI's log (attribute source=guest, on a logger the runtime tagged
// with filter=NAME) is counted in sluice_filter_log_records_total{filter,
// level} before h handles it. It is how a guest feeds a metric: the waf
// filter logs one warn line per matched rule, so its warn count is its
// match count. A record h does not keep (below the log level) is neither
// logged nor counted. With m nil it returns h.
func (m *Metrics) GuestLogs(h slog.Handler) slog.Handler {
	if m == nil {
		return h
	}
	return &guestLogHandler{h: h, m: m}
}

type guestLogHandler struct {
	h      slog.Handler
	m      *Metrics
	filter string // from WithAttrs, "" until a filter= attribute was added
}

func (g *guestLogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return g.h.Enabled(ctx, l)
}

func (g *guestLogHandler) Handle(ctx context.Context, r slog.Record) error {
	if g.filter != "" && fromGuest(r) {
		g.m.guestLog(g.filter, r.Level)
	}
	return g.h.Handle(ctx, r)
}

func (g *guestLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	filter := g.filter
	for _, a := range as {
		if a.Key == "filter" {
			filter = a.Value.String()
		}
	}
	return &guestLogHandler{h: g.h.WithAttrs(as), m: g.m, filter: filter}
}

func (g *guestLogHandler) WithGroup(name string) slog.Handler {
	return &guestLogHandler{h: g.h.WithGroup(name), m: g.m, filter: g.filter}
}

// fromGuest reports whether r carries source=guest.
func fromGuest(r slog.Record) bool {
	guest := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "source" {
			guest = a.Value.Kind() == slog.KindString && a.Value.String() == "guest"
			return false
		}
		return true
	})
	return guest
}

// guestLog counts one guest log record.
func (m *Metrics) guestLog(filter string, l slog.Level) {
	m.guestLogs.WithLabelValues(filter, levelLabel(l)).Inc()
}

// levelLabel names a level as the ABI's log levels are named.
func levelLabel(l slog.Level) string {
	switch {
	case l < slog.LevelInfo:
		return "debug"
	case l < slog.LevelWarn:
		return "info"
	case l < slog.LevelError:
		return "warn"
	}
	return "error"
}

func newGuestLogs() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_filter_log_records_total",
		Help: "Log records a filter's guest wrote through the ABI's log and the server log kept, by level.",
	}, []string{labelFilter, "level"})
}
