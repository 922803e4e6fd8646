package observe

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"
)

// AccessLogOptions configure OpenAccessLog.
type AccessLogOptions struct {
	// Format is "json" (one object per line, the default when "") or
	// "clf" (the combined log format, then host, site, route, duration,
	// trace and span ids as key=value pairs).
	Format string
	// Output is "stderr" (the default when ""), "stdout" or a file path,
	// opened for appending and created with mode 0644.
	Output string
	// Fields name what a line holds, from FieldNames, in order: a JSON
	// line's keys, or the key=value pairs that follow the combined log
	// format's fields in CLF. nil means the format's defaults: for JSON
	// time, remote_addr, method, uri, proto, status, bytes, duration,
	// host, user_agent, referer, site, route, trace_id, span_id; for CLF
	// host, site, route, duration, trace_id, span_id.
	Fields []string
	// Writer, when set, replaces Output (tests).
	Writer io.Writer
	// FlushInterval is the longest a line waits in the buffer; 0 means 1s.
	FlushInterval time.Duration
	// BufferSize is the write buffer; 0 means 64 KiB. A full buffer is
	// written at once.
	BufferSize int
}

// AccessLog writes one line per request through a buffer that is flushed
// when full and every FlushInterval. Lines are formatted by appending
// into pooled byte slices; a request does not allocate here.
type AccessLog struct {
	clf      bool
	fields   []field
	needs    uint8 // need* bits: what the wrapper gathers for fields
	output   string
	interval time.Duration

	mu   sync.Mutex // guards w, f and the bytes written through them
	w    *bufio.Writer
	f    *os.File // nil for stderr, stdout and Writer
	done chan struct{}
	wg   sync.WaitGroup
}

// OpenAccessLog opens the output and starts the periodic flush.
func OpenAccessLog(o AccessLogOptions) (*AccessLog, error) {
	l := &AccessLog{output: o.Output, interval: o.FlushInterval, done: make(chan struct{})}
	switch o.Format {
	case "", "json":
	case "clf":
		l.clf = true
	default:
		return nil, fmt.Errorf("access log: format %q: want \"json\" or \"clf\"", o.Format)
	}
	l.fields = defaultJSONFields
	if l.clf {
		l.fields = defaultCLFFields
	}
	if o.Fields != nil {
		var err error
		if l.fields, l.needs, err = parseFields(o.Fields); err != nil {
			return nil, err
		}
	}
	if l.interval <= 0 {
		l.interval = time.Second
	}
	size := o.BufferSize
	if size <= 0 {
		size = 64 << 10
	}
	var out io.Writer
	switch {
	case o.Writer != nil:
		out = o.Writer
	case o.Output == "" || o.Output == "stderr":
		out = os.Stderr
	case o.Output == "stdout":
		out = os.Stdout
	default:
		f, err := openLogFile(o.Output)
		if err != nil {
			return nil, err
		}
		l.f, out = f, f
	}
	l.w = bufio.NewWriterSize(out, size)
	l.wg.Add(1)
	go l.flushLoop()
	return l, nil
}

func openLogFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("access log: %w", err)
	}
	return f, nil
}

func (l *AccessLog) flushLoop() {
	defer l.wg.Done()
	t := time.NewTicker(l.interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			_ = l.Flush()
		case <-l.done:
			return
		}
	}
}

// Flush writes the buffered lines out.
func (l *AccessLog) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Flush()
}

// Reopen flushes and closes the log file and opens the same path again,
// for log rotation (SIGUSR1): the rotator renames the file, then signals.
// For stderr and stdout it only flushes. On error the old file is kept.
func (l *AccessLog) Reopen() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.w.Flush()
	if l.f == nil {
		return err
	}
	f, oerr := openLogFile(l.output)
	if oerr != nil {
		return errors.Join(err, oerr)
	}
	old := l.f
	l.f = f
	l.w.Reset(f)
	return errors.Join(err, old.Close())
}

// Close stops the periodic flush, flushes, and closes the file.
func (l *AccessLog) Close() error {
	if l == nil {
		return nil
	}
	select {
	case <-l.done:
		return nil
	default:
		close(l.done)
	}
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.w.Flush()
	if l.f != nil {
		err = errors.Join(err, l.f.Close())
		l.f = nil
	}
	return err
}

// Entry is one request as the access log sees it. Byte slices may alias
// the exchange's buffers: Log formats them before it returns and keeps
// nothing.
type Entry struct {
	Time      time.Time // when the request started
	Duration  time.Duration
	Remote    net.Addr
	Method    []byte
	URI       []byte
	Proto     string
	Status    int
	Bytes     int64
	Host      []byte
	UserAgent []byte
	Referer   []byte
	Site      string
	Route     string
	// TraceID is the request's trace: its span's, or with tracing off
	// the one its traceparent header carried; zero when none.
	TraceID trace.TraceID
	// SpanID is sluice's span of the request; zero with tracing off.
	SpanID trace.SpanID

	// The fields below are filled only when a field asks for them.

	// RequestID is the X-Request-Id passed upstream.
	RequestID []byte
	// Consumer is the identity a filter set (the header a rate limit
	// keyed by "consumer" reads, X-Consumer).
	Consumer []byte
	// UpstreamAddr is the host:port of the proxy's last try, "" when the
	// request reached no upstream; UpstreamStatus its response status (0
	// when none came), UpstreamDuration how long it took until the
	// response headers arrived.
	UpstreamAddr     string
	UpstreamStatus   int
	UpstreamDuration time.Duration
	// TLS is the connection's handshake; nil in the clear.
	TLS *tls.ConnectionState
}

var linePool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// Log writes e as one line.
func (l *AccessLog) Log(e *Entry) {
	bp := linePool.Get().(*[]byte)
	b := (*bp)[:0]
	if l.clf {
		b = append(appendCLFFields(appendCombined(b, e), e, l.fields), '\n')
	} else {
		b = appendJSONFields(b, e, l.fields)
	}
	l.mu.Lock()
	_, _ = l.w.Write(b)
	l.mu.Unlock()
	if cap(b) <= 16<<10 { // don't keep a buffer grown by one odd request
		*bp = b
		linePool.Put(bp)
	}
}

// AppendJSON appends e as a JSON object and a newline, with the default
// fields (those of AccessLogOptions.Fields).
func AppendJSON(b []byte, e *Entry) []byte { return appendJSONFields(b, e, defaultJSONFields) }

// AppendCLF appends e in the combined log format, then
// ` host="…" site="…" route="…" duration=SECONDS trace_id=… span_id=…`
// ("-" for ids when untraced) and a newline: the default fields (those
// of AccessLogOptions.Fields).
func AppendCLF(b []byte, e *Entry) []byte {
	return append(appendCLFFields(appendCombined(b, e), e, defaultCLFFields), '\n')
}

// appendCombined appends e's fields of the combined log format. Quoted
// values escape '"', '\' and bytes outside printable ASCII as \xHH, as
// nginx does (appendCLFEscaped).
func appendCombined(b []byte, e *Entry) []byte {
	b = appendAddr(b, e.Remote, false)
	b = append(b, " - - ["...)
	b = appendTime(b, e.Time, true)
	b = append(b, `] "`...)
	b = appendCLFEscaped(b, e.Method)
	b = append(b, ' ')
	b = appendCLFEscaped(b, e.URI)
	b = append(b, ' ')
	b = appendCLFEscaped(b, e.Proto)
	b = append(b, `" `...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, ' ')
	if e.Bytes > 0 {
		b = strconv.AppendInt(b, e.Bytes, 10)
	} else {
		b = append(b, '-')
	}
	b = append(b, ` "`...)
	b = appendCLFOrDash(b, e.Referer)
	b = append(b, `" "`...)
	b = appendCLFOrDash(b, e.UserAgent)
	return append(b, '"')
}

// stamp is the formatted form of one second, shared by the lines logged
// in it: formatting a time is the costliest part of a line otherwise.
type stamp struct {
	sec  int64
	loc  *time.Location
	json []byte // "2006-01-02T15:04:05" and, after the milliseconds, the zone
	zone []byte // "Z" or "+01:00"
	clf  []byte // "02/Jan/2006:15:04:05 -0700"
}

var lastStamp atomic.Pointer[stamp]

// appendTime appends t as "2006-01-02T15:04:05.000Z07:00" (JSON) or
// "02/Jan/2006:15:04:05 -0700" (CLF).
func appendTime(b []byte, t time.Time, clf bool) []byte {
	sec := t.Unix()
	st := lastStamp.Load()
	if st == nil || st.sec != sec || st.loc != t.Location() {
		st = &stamp{sec: sec, loc: t.Location(),
			json: t.AppendFormat(nil, "2006-01-02T15:04:05"),
			zone: t.AppendFormat(nil, "Z07:00"),
			clf:  t.AppendFormat(nil, "02/Jan/2006:15:04:05 -0700")}
		lastStamp.Store(st)
	}
	if clf {
		return append(b, st.clf...)
	}
	b = append(b, st.json...)
	ms := t.Nanosecond() / 1e6
	b = append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	return append(b, st.zone...)
}

// appendAddr appends the IP (and the port, when withPort) of a.
func appendAddr(b []byte, a net.Addr, withPort bool) []byte {
	switch a := a.(type) {
	case *net.TCPAddr:
		ap := a.AddrPort()
		if withPort {
			return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).AppendTo(b)
		}
		return ap.Addr().Unmap().AppendTo(b)
	case nil:
		return append(b, '-')
	}
	s := a.String()
	if !withPort {
		if h, _, err := net.SplitHostPort(s); err == nil {
			s = h
		}
	}
	return appendJSONInner(b, s)
}

const (
	hexDigits = "0123456789abcdef"
	upperHex  = "0123456789ABCDEF"
)

func appendHex(b []byte, p []byte) []byte {
	for _, c := range p {
		b = append(b, hexDigits[c>>4], hexDigits[c&15])
	}
	return b
}

func appendJSONString[T []byte | string](b []byte, s T) []byte {
	b = append(b, '"')
	b = appendJSONInner(b, s)
	return append(b, '"')
}

// appendJSONInner escapes s for a JSON string: quotes, backslashes,
// control characters; invalid UTF-8 becomes U+FFFD. It and
// appendCLFEscaped are the escapers of the access log: every byte a
// client sent (method, target, headers, the TLS server name, a trusted
// request id) reaches a line through one of them, so that no CR, LF, NUL
// or other control character can end a line or forge one
// (TestAccessLogEscapesControls).
func appendJSONInner[T []byte | string](b []byte, s T) []byte {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			clean = false
			break
		}
	}
	if clean {
		return append(b, s...)
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c >= 0x20 && c != 0x7f:
				b = append(b, c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
			}
			i++
			continue
		}
		var r rune
		var n int
		switch v := any(s).(type) {
		case string:
			r, n = utf8.DecodeRuneInString(v[i:])
		case []byte:
			r, n = utf8.DecodeRune(v[i:])
		}
		if r == utf8.RuneError && n == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return b
}

func appendCLFOrDash(b, s []byte) []byte {
	if len(s) == 0 {
		return append(b, '-')
	}
	return appendCLFEscaped(b, s)
}

// appendCLFEscaped escapes s for a quoted CLF value: '"', '\', control
// characters (CR, LF and NUL among them) and bytes outside printable
// ASCII become \xHH (see appendJSONInner).
func appendCLFEscaped[T []byte | string](b []byte, s T) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			b = append(b, '\\', 'x', upperHex[c>>4], upperHex[c&15])
			continue
		}
		b = append(b, c)
	}
	return b
}
