package observe

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestGuestLogsCounted: records logged with source=guest on a logger
// tagged filter=NAME are counted by filter and level, and still logged;
// the host's own records, a guest's stdout, and records below the log
// level are not counted.
func TestGuestLogsCounted(t *testing.T) {
	m := NewMetrics()
	var out bytes.Buffer
	base := slog.New(m.GuestLogs(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo})))
	waf := base.With("filter", "waf")
	waf.Warn("waf: rule 942100 matched", "source", "guest")
	waf.Warn("waf: rule 949110 matched", "source", "guest")
	waf.Error("setup", "source", "guest")
	waf.Debug("dropped: below the level", "source", "guest")
	waf.Warn("a line on stdout", "source", "stdout")
	waf.Warn("filter swapped")
	base.Warn("no filter", "source", "guest")
	base.With("filter", "jwt").WithGroup("g").Info("hello", "source", "guest")

	for _, c := range []struct {
		filter, level string
		want          float64
	}{
		{"waf", "warn", 2},
		{"waf", "error", 1},
		{"waf", "debug", 0},
		{"jwt", "info", 1},
	} {
		s := series(t, m, "sluice_filter_log_records_total", map[string]string{"filter": c.filter, "level": c.level})
		got := 0.0
		if s != nil {
			got = s.GetCounter().GetValue()
		}
		if got != c.want {
			t.Errorf("%s %s: %v, want %v", c.filter, c.level, got, c.want)
		}
	}
	if n := strings.Count(out.String(), "\n"); n != 7 {
		t.Errorf("%d lines logged, want 7:\n%s", n, out.String())
	}
}
