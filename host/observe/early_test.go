package observe

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/exchange"
)

// TestWrapEarly: an error no route's Wrap saw is logged and counted once,
// with empty site and route; one a route's Wrap saw is not counted again,
// and keeps its status and identity for the renderer.
func TestWrapEarly(t *testing.T) {
	notFound := exchange.Errorf(404, "")
	for _, c := range []struct {
		name    string
		viaWrap bool
		err     error
		want    string
	}{
		{"door", false, exchange.Errorf(505, "http version not supported"), `{"status":505,"site":"","route":""}`},
		{"route", true, notFound, `{"status":404,"site":"example.com","route":"/"}`},
		{"ok", true, nil, `{"status":200,"site":"example.com","route":"/"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf syncBuffer
			l, _ := OpenAccessLog(AccessLogOptions{Fields: []string{"status", "site", "route"}, Writer: &buf})
			m := NewMetrics()
			o := &Observer{Metrics: m, AccessLog: l}
			var h exchange.Handler = exchange.HandlerFunc(func(exchange.Exchange) error { return c.err })
			if c.viaWrap {
				h = o.Wrap("example.com", "/", h)
			}
			err := o.WrapEarly(h).ServeExchange(newFake("GET", "/"))
			l.Close()
			if !errors.Is(err, c.err) || (c.err != nil && exchange.StatusOf(err) != exchange.StatusOf(c.err)) {
				t.Errorf("error %v, want %v", err, c.err)
			}
			lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
			if len(lines) != 1 || lines[0] != c.want {
				t.Errorf("log %q, want %s", lines, c.want)
			}
			var n uint64
			for _, mt := range gather(t, m)["http_server_request_duration_seconds"].GetMetric() {
				n += mt.GetHistogram().GetSampleCount()
			}
			if n != 1 {
				t.Errorf("%d requests counted, want 1", n)
			}
			if !json.Valid([]byte(lines[0])) {
				t.Error("invalid JSON")
			}
		})
	}
}
