package observe

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/host/exchange"
)

// fullEntry is testEntry with every optional field set.
func fullEntry() *Entry {
	e := testEntry()
	e.RequestID = []byte("req-1")
	e.Consumer = []byte("alice")
	e.UpstreamAddr, e.UpstreamStatus, e.UpstreamDuration = "10.0.0.1:8080", 502, 3*time.Millisecond
	e.TLS = &tls.ConnectionState{Version: tls.VersionTLS13, CipherSuite: tls.TLS_AES_128_GCM_SHA256, ServerName: "example.com"}
	return e
}

func formatLine(t *testing.T, format string, fields []string, e *Entry) string {
	t.Helper()
	var buf syncBuffer
	l, err := OpenAccessLog(AccessLogOptions{Format: format, Fields: fields, Writer: &buf})
	if err != nil {
		t.Fatal(err)
	}
	l.Log(e)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

const combined = `192.0.2.7 - - [04/Mar/2026:05:06:07 +0000] "GET /a\x22b\x5Cc?q=1 HTTP/1.1" 200 1234 "-" "curl/8.0 \x01\xFF"`

// TestAccessLogFormats: each format with its default fields writes the
// lines of old, and a list of fields picks and orders what a line holds.
func TestAccessLogFormats(t *testing.T) {
	extra := []string{"status", "request_id", "consumer", "upstream_addr", "upstream_status",
		"upstream_duration", "tls_version", "tls_cipher", "tls_server_name"}
	for _, c := range []struct {
		name, format string
		fields       []string
		entry        *Entry
		want         string
	}{
		{"json default", "json", nil, fullEntry(), string(AppendJSON(nil, testEntry()))},
		{"clf default", "clf", nil, fullEntry(), string(AppendCLF(nil, testEntry()))},
		{"json fields", "json", extra, fullEntry(),
			`{"status":200,"request_id":"req-1","consumer":"alice","upstream_addr":"10.0.0.1:8080","upstream_status":502,` +
				`"upstream_duration":0.003,"tls_version":"TLSv1.3","tls_cipher":"TLS_AES_128_GCM_SHA256","tls_server_name":"example.com"}` + "\n"},
		{"json fields absent", "json", extra, testEntry(), `{"status":200}` + "\n"},
		{"json order", "json", []string{"route", "time", "trace_id"}, testEntry(),
			`{"route":"/","time":"2026-03-04T05:06:07.890Z","trace_id":"` + parentTrace + `"}` + "\n"},
		{"clf fields", "clf", extra, fullEntry(), combined +
			` status=200 request_id="req-1" consumer="alice" upstream_addr="10.0.0.1:8080" upstream_status=502` +
			` upstream_duration=0.003000 tls_version="TLSv1.3" tls_cipher="TLS_AES_128_GCM_SHA256" tls_server_name="example.com"` + "\n"},
		{"clf fields absent", "clf", extra, testEntry(), combined +
			` status=200 request_id="-" consumer="-" upstream_addr="-" upstream_status=- upstream_duration=-` +
			` tls_version="-" tls_cipher="-" tls_server_name="-"` + "\n"},
		{"clf none", "clf", []string{}, testEntry(), combined + "\n"},
		{"clf time and address", "clf", []string{"time", "remote_addr"}, testEntry(), combined +
			` time=[04/Mar/2026:05:06:07 +0000] remote_addr="192.0.2.7:40000"` + "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := formatLine(t, c.format, c.fields, c.entry)
			if got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
			if c.format == "json" && !json.Valid([]byte(got)) {
				t.Errorf("invalid JSON: %s", got)
			}
		})
	}
}

func TestAccessLogFieldErrors(t *testing.T) {
	for _, fields := range [][]string{{"time", "nope"}, {"status", "status"}} {
		if _, err := OpenAccessLog(AccessLogOptions{Fields: fields, Writer: discard{}}); err == nil {
			t.Errorf("fields %q accepted", fields)
		}
	}
}

// TestAccessLogEscapesControls: CR, LF, NUL and the other control
// characters a client can put into a field never reach the line raw
// (appendJSONInner, appendCLFEscaped), so that no line can be ended
// early or a forged one added, in either format.
func TestAccessLogEscapesControls(t *testing.T) {
	const evil = "a\r\nb\x00c\x1b[31md\x7fe\tf"
	e := fullEntry()
	e.Method, e.URI, e.Host = []byte(evil), []byte("/"+evil), []byte(evil)
	e.UserAgent, e.Referer, e.RequestID, e.Consumer = []byte(evil), []byte(evil), []byte(evil), []byte(evil)
	e.Proto, e.TLS.ServerName = evil, evil
	all := FieldNames()
	for _, c := range []struct {
		format string
		fields []string
	}{{"json", nil}, {"json", all}, {"clf", nil}, {"clf", all}} {
		line := formatLine(t, c.format, c.fields, e)
		body, ok := strings.CutSuffix(line, "\n")
		if !ok {
			t.Fatalf("%s: no final newline: %q", c.format, line)
		}
		for i := 0; i < len(body); i++ {
			if b := body[i]; b < 0x20 || b == 0x7f {
				t.Errorf("%s %d fields: raw control byte %#x at %d: %q", c.format, len(c.fields), b, i, body)
				break
			}
		}
		if c.format == "json" {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			if c.fields != nil && (m["consumer"] != evil || m["tls_server_name"] != evil) {
				t.Errorf("JSON does not carry the escaped value back: %v", m)
			}
		}
	}
}

// wrapLog serves x through h behind an access log of format and fields
// and returns the line.
func wrapLog(t *testing.T, o *Observer, format string, fields []string, h exchange.HandlerFunc, x *fakeExchange) string {
	t.Helper()
	var buf syncBuffer
	l, err := OpenAccessLog(AccessLogOptions{Format: format, Fields: fields, Writer: &buf})
	if err != nil {
		t.Fatal(err)
	}
	o.AccessLog = l
	w := o.Wrap("example.com", "/", h)
	err = w.ServeExchange(x)
	if err != nil {
		exchangeRender(x, err)
	}
	l.Close()
	return buf.String()
}

// exchangeRender stands in for host/listen's renderError: what it sets
// is what the engines send.
func exchangeRender(x *fakeExchange, err error) {
	x.status = exchange.StatusOf(err)
}

type pageErr struct{ body []byte }

func (p pageErr) Error() string               { return "page" }
func (p pageErr) ErrorPage() (string, []byte) { return "text/html", p.body }

// TestAccessLogBytes: bytes counts the body bytes sent. A HEAD answer
// sends none (it logged the page's 72 before), an error sends the page
// host/listen renders for it (a 429 logged 0 for its 18 bytes before).
func TestAccessLogBytes(t *testing.T) {
	page := bytes.Repeat([]byte("x"), 72)
	for _, c := range []struct {
		name, method string
		h            exchange.HandlerFunc
		want         int64
	}{
		{"GET 200", "GET", func(x exchange.Exchange) error { x.SetBody(page); return nil }, 72},
		{"HEAD 404 page", "HEAD", func(x exchange.Exchange) error { x.SetStatus(404); x.SetBody(page); return nil }, 0},
		{"HEAD error", "HEAD", func(x exchange.Exchange) error { return exchange.Errorf(404, "") }, 0},
		{"429", "GET", func(x exchange.Exchange) error { return exchange.Errorf(http.StatusTooManyRequests, "") }, 18},
		{"429 message", "GET", func(x exchange.Exchange) error { return exchange.Errorf(429, "slow down") }, 10},
		{"plain error", "GET", func(x exchange.Exchange) error { return errEOFLike }, int64(len("Internal Server Error\n"))},
		{"unknown status", "GET", func(x exchange.Exchange) error { return exchange.Errorf(599, "") }, int64(len("status 599\n"))},
		{"204", "GET", func(x exchange.Exchange) error { x.SetStatus(204); x.SetBody(page); return nil }, 0},
		{"304", "GET", func(x exchange.Exchange) error {
			x.SetStatus(304)
			x.SetResponseHeader("Content-Length", "72")
			return nil
		}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			line := wrapLog(t, &Observer{}, "json", []string{"status", "bytes"}, c.h, newFake(c.method, "/"))
			var m struct{ Bytes int64 }
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			if m.Bytes != c.want {
				t.Errorf("bytes = %d, want %d (%s)", m.Bytes, c.want, line)
			}
		})
	}
}

var errEOFLike = errorString("connection reset")

type errorString string

func (e errorString) Error() string { return string(e) }

func TestErrorBodySizeOfAPage(t *testing.T) {
	if n := errorBodySize(pageErr{body: make([]byte, 33)}, 404); n != 33 {
		t.Errorf("page of 33 bytes counted %d", n)
	}
}

// TestAccessLogTraceIDWithoutTracing: with tracing off, every format
// logs the trace id the request's traceparent carried (a CLF line showed
// trace_id=- before), and no span id, since sluice made no span.
func TestAccessLogTraceIDWithoutTracing(t *testing.T) {
	ok := func(x exchange.Exchange) error { return nil }
	for _, c := range []struct{ format, want string }{
		{"clf", " trace_id=" + parentTrace + " span_id=-\n"},
		{"json", `"trace_id":"` + parentTrace + `"}` + "\n"},
	} {
		x := newFake("GET", "/")
		x.reqHdr["traceparent"] = []byte("00-" + parentTrace + "-00f067aa0ba902b7-01")
		line := wrapLog(t, &Observer{}, c.format, nil, ok, x)
		if !strings.HasSuffix(line, c.want) {
			t.Errorf("%s: %q does not end in %q", c.format, line, c.want)
		}
	}
}

func TestTraceparentID(t *testing.T) {
	want, _ := trace.TraceIDFromHex(parentTrace)
	for _, c := range []struct {
		tp string
		ok bool
	}{
		{"00-" + parentTrace + "-00f067aa0ba902b7-01", true},
		{"01-" + parentTrace + "-00f067aa0ba902b7-01-later", true},
		{"00-" + parentTrace + "-00f067aa0ba902b7-01-", false}, // version 00 has nothing after
		{"ff-" + parentTrace + "-00f067aa0ba902b7-01", false},
		{"00-" + strings.ToUpper(parentTrace) + "-00f067aa0ba902b7-01", false},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false},
		{"00-" + parentTrace + "-0000000000000000-01", false},
		{"00-" + parentTrace + "-00f067aa0ba902b7-0", false},
		{"00-" + parentTrace + "-00f067aa0ba902b7-zz", false},
		{"00_" + parentTrace + "-00f067aa0ba902b7-01", false},
		{"", false},
	} {
		got := traceparentID([]byte(c.tp))
		if (got == want) != c.ok || (!c.ok && got.IsValid()) {
			t.Errorf("%q: %v, want ok %v", c.tp, got, c.ok)
		}
	}
}

// TestRequestID: a request id is made when the request has none, or when
// it came from a peer that is not a trusted proxy (the front door's
// decision, exchange.PeerTrusted); a trusted proxy's is kept. Either way
// it is on the request (so the proxy passes it upstream), in the log and
// on the span.
func TestRequestID(t *testing.T) {
	for _, c := range []struct {
		name     string
		trusted  bool
		incoming string
		kept     bool
	}{
		{"none", false, "", false},
		{"untrusted", false, "forged", false},
		{"trusted", true, "from-lb-1", true},
		{"trusted, none", true, "", false},
		{"trusted, bad", true, "a b", false},
		{"trusted, long", true, strings.Repeat("a", maxRequestID+1), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, exp := newTestTracing(t, 1)
			x := newFake("GET", "/")
			x.trusted = c.trusted
			if c.incoming != "" {
				x.reqHdr["x-request-id"] = []byte(c.incoming)
			}
			var seen string
			h := func(x exchange.Exchange) error { seen = string(x.RequestHeader("X-Request-Id")); return nil }
			line := wrapLog(t, &Observer{Tracing: tr}, "json", []string{"request_id"}, h, x)
			var m struct {
				RequestID string `json:"request_id"`
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			switch {
			case c.kept && seen != c.incoming:
				t.Errorf("upstream saw %q, want %q", seen, c.incoming)
			case !c.kept && (len(seen) != 32 || seen == c.incoming):
				t.Errorf("upstream saw %q, want a new id", seen)
			case m.RequestID != seen:
				t.Errorf("logged %q, upstream saw %q", m.RequestID, seen)
			}
			spans := flushed(t, tr, exp)
			if len(spans) != 1 {
				t.Fatalf("%d spans", len(spans))
			}
			if got := attrs(spans[0])["http.request.header.x-request-id"].AsStringSlice(); !reflect.DeepEqual(got, []string{seen}) {
				t.Errorf("span has request id %q, want %q", got, seen)
			}
		})
	}
}

// TestAccessLogUpstream: the proxy's tries reach the line through
// Upstream.Tried, with or without metrics; without the upstream fields
// and metrics no handle is made.
func TestAccessLogUpstream(t *testing.T) {
	fields := []string{"upstream_addr", "upstream_status", "upstream_duration", "consumer", "tls_version", "tls_server_name"}
	for _, m := range []*Metrics{nil, NewMetrics()} {
		o := &Observer{Metrics: m}
		var buf syncBuffer
		o.AccessLog, _ = OpenAccessLog(AccessLogOptions{Fields: fields, Writer: &buf})
		first, second := o.Upstream("/", "http://10.0.0.1:8080"), o.Upstream("/", "https://b.test:8443")
		if first == nil || second == nil {
			t.Fatal("no upstream handle for the access log")
		}
		h := o.Wrap("example.com", "/", exchange.HandlerFunc(func(x exchange.Exchange) error {
			first.Request(0, time.Millisecond)
			first.Tried(x, 0, time.Millisecond) // a failed try, then a retry
			second.Request(200, 2*time.Millisecond)
			second.Tried(x, 200, 2*time.Millisecond)
			x.SetRequestHeader("X-Consumer", "alice") // an auth filter
			return nil
		}))
		x := newFake("GET", "/")
		x.tls = &tls.ConnectionState{Version: tls.VersionTLS12, ServerName: "b.test"}
		h.ServeExchange(x)
		o.AccessLog.Close()
		want := `{"upstream_addr":"b.test:8443","upstream_status":200,"upstream_duration":0.002,"consumer":"alice","tls_version":"TLSv1.2","tls_server_name":"b.test"}` + "\n"
		if got := buf.String(); got != want {
			t.Errorf("metrics %v: got\n%s\nwant\n%s", m != nil, got, want)
		}
		first.Close()
		second.Close()
	}
	l, _ := OpenAccessLog(AccessLogOptions{Writer: discard{}})
	defer l.Close()
	if u := (&Observer{AccessLog: l}).Upstream("/", "http://a.test"); u != nil {
		t.Error("a handle without metrics or upstream fields")
	}
}

// TestWrapNoAllocs: with metrics and the default access log a request
// allocates nothing, a traceparent read without tracing included.
func TestWrapNoAllocs(t *testing.T) {
	for _, format := range []string{"json", "clf"} {
		l, err := OpenAccessLog(AccessLogOptions{Format: format, Writer: discard{}})
		if err != nil {
			t.Fatal(err)
		}
		h := (&Observer{Metrics: NewMetrics(), AccessLog: l}).Wrap("example.com", "/api/", okHandler)
		x := newFake("GET", "/api/items?id=7")
		x.reqHdr["traceparent"] = []byte("00-" + parentTrace + "-00f067aa0ba902b7-01")
		if a := testing.AllocsPerRun(200, func() { x.reset(); h.ServeExchange(x) }); a != 0 {
			t.Errorf("%s: %v allocations per request, want 0", format, a)
		}
		l.Close()
	}
}
