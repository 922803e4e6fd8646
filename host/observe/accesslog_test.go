package observe

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/host/exchange"
)

func testEntry() *Entry {
	tid, _ := trace.TraceIDFromHex(parentTrace)
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	return &Entry{
		Time:      time.Date(2026, 3, 4, 5, 6, 7, 890_000_000, time.UTC),
		Duration:  1500 * time.Microsecond,
		Remote:    &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 40000},
		Method:    []byte("GET"),
		URI:       []byte(`/a"b\c?q=1`),
		Proto:     "HTTP/1.1",
		Status:    200,
		Bytes:     1234,
		Host:      []byte("example.com"),
		UserAgent: []byte("curl/8.0 \x01\xff"),
		Referer:   nil,
		Site:      "example.com",
		Route:     "/",
		TraceID:   tid,
		SpanID:    sid,
	}
}

func TestAppendJSON(t *testing.T) {
	line := AppendJSON(nil, testEntry())
	if !bytes.HasSuffix(line, []byte("}\n")) {
		t.Fatalf("no newline: %q", line)
	}
	var got map[string]any
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatalf("invalid JSON %s: %v", line, err)
	}
	want := map[string]any{
		"time": "2026-03-04T05:06:07.890Z", "remote_addr": "192.0.2.7:40000", "method": "GET",
		"uri": `/a"b\c?q=1`, "proto": "HTTP/1.1", "status": 200.0, "bytes": 1234.0, "duration": 0.0015,
		"host": "example.com", "user_agent": "curl/8.0 \x01\ufffd", "referer": "", "site": "example.com",
		"route": "/", "trace_id": parentTrace, "span_id": "00f067aa0ba902b7",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %#v, want %#v", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("fields %v, want %d", got, len(want))
	}
	e := testEntry()
	e.TraceID, e.SpanID = trace.TraceID{}, trace.SpanID{}
	if line := AppendJSON(nil, e); bytes.Contains(line, []byte("trace_id")) {
		t.Errorf("untraced entry has a trace id: %s", line)
	}
}

func TestAppendCLF(t *testing.T) {
	got := string(AppendCLF(nil, testEntry()))
	want := `192.0.2.7 - - [04/Mar/2026:05:06:07 +0000] "GET /a\x22b\x5Cc?q=1 HTTP/1.1" 200 1234 "-" "curl/8.0 \x01\xFF"` +
		` host="example.com" site="example.com" route="/" duration=0.001500 trace_id=` + parentTrace + " span_id=00f067aa0ba902b7\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	e := testEntry()
	e.TraceID, e.SpanID, e.Bytes = trace.TraceID{}, trace.SpanID{}, 0
	got = string(AppendCLF(nil, e))
	if !strings.Contains(got, `" 200 - "`) || !strings.HasSuffix(got, " trace_id=- span_id=-\n") {
		t.Errorf("untraced, empty: %s", got)
	}
}

func TestAccessLogNoAllocs(t *testing.T) {
	for _, format := range []string{"json", "clf"} {
		l, err := OpenAccessLog(AccessLogOptions{Format: format, Writer: discard{}})
		if err != nil {
			t.Fatal(err)
		}
		e := testEntry()
		if a := testing.AllocsPerRun(200, func() { l.Log(e) }); a != 0 {
			t.Errorf("%s: %v allocations per line, want 0", format, a)
		}
		l.Close()
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// syncBuffer is a bytes.Buffer safe for the flush goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestAccessLogPeriodicFlush(t *testing.T) {
	var buf syncBuffer
	l, err := OpenAccessLog(AccessLogOptions{Writer: &buf, FlushInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Log(testEntry())
	deadline := time.Now().Add(5 * time.Second)
	for buf.String() == "" {
		if time.Now().After(deadline) {
			t.Fatal("line never flushed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestAccessLogReopen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	l, err := OpenAccessLog(AccessLogOptions{Format: "clf", Output: path, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	l.Log(testEntry())
	if err := os.Rename(path, path+".1"); err != nil { // the rotator
		t.Fatal(err)
	}
	if err := l.Reopen(); err != nil { // SIGUSR1
		t.Fatal(err)
	}
	l.Log(testEntry())
	l.Log(testEntry())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	for p, want := range map[string]int{path + ".1": 1, path: 2} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(b, []byte("\n")); n != want {
			t.Errorf("%s: %d lines, want %d", filepath.Base(p), n, want)
		}
	}
}

func TestAccessLogBadOptions(t *testing.T) {
	if _, err := OpenAccessLog(AccessLogOptions{Format: "xml"}); err == nil {
		t.Error("format xml accepted")
	}
	if _, err := OpenAccessLog(AccessLogOptions{Output: filepath.Join(t.TempDir(), "missing", "a.log")}); err == nil {
		t.Error("a file in a missing directory accepted")
	}
}

func TestWrapLogsErrorsWithTheirStatus(t *testing.T) {
	var buf syncBuffer
	l, _ := OpenAccessLog(AccessLogOptions{Writer: &buf})
	tr, _ := newTestTracing(t, 1)
	h := (&Observer{AccessLog: l, Tracing: tr}).Wrap("example.com", "/", exchange.HandlerFunc(func(x exchange.Exchange) error {
		return exchange.Errorf(404, "not here")
	}))
	h.ServeExchange(newFake("GET", "/nope"))
	l.Close()
	var got map[string]any
	if err := json.Unmarshal([]byte(buf.String()), &got); err != nil {
		t.Fatalf("%q: %v", buf.String(), err)
	}
	if got["status"] != 404.0 || got["site"] != "example.com" || got["uri"] != "/nope" || len(got["trace_id"].(string)) != 32 {
		t.Errorf("entry = %v", got)
	}
}
