package frontdoor_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/qpack"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/quicvarint"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/frontdoor"
	"github.com/sluicehq/sluice/host/route"
)

// rawExchange is a request as a client's bytes made it, whatever an
// engine's parser would have let through: what the door must judge on
// its own (the finding: host/h2 passed pseudo-header values unchecked).
type rawExchange struct {
	exchange.Exchange // nil: a method the door should not call panics
	method, uri       string
	proto             string
	fields            [][2]string
}

func (r *rawExchange) Method() []byte     { return []byte(r.method) }
func (r *rawExchange) RequestURI() []byte { return []byte(r.uri) }
func (r *rawExchange) Proto() string      { return r.proto }
func (r *rawExchange) Multiplexed() bool  { return r.proto != "HTTP/1.1" }
func (r *rawExchange) IsTLS() bool        { return false }
func (r *rawExchange) Host() []byte       { return r.RequestHeader("Host") }
func (r *rawExchange) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 4242}
}
func (r *rawExchange) ContentLength() int64 { return 0 }
func (r *rawExchange) RequestHeader(name string) []byte {
	for _, f := range r.fields {
		if strings.EqualFold(f[0], name) {
			return []byte(f[1])
		}
	}
	return nil
}
func (r *rawExchange) VisitRequestHeaders(fn func(name, value []byte)) {
	for _, f := range r.fields {
		fn([]byte(f[0]), []byte(f[1]))
	}
}
func (r *rawExchange) DelRequestHeader(name string) {
	out := r.fields[:0]
	for _, f := range r.fields {
		if !strings.EqualFold(f[0], name) {
			out = append(out, f)
		}
	}
	r.fields = out
}
func (r *rawExchange) SetRequestHeader(name, value string) {
	r.DelRequestHeader(name)
	r.fields = append(r.fields, [2]string{name, value})
}

// syntaxCase is one request, sent as its protocol allows: proto
// "HTTP/1.1" cases as request bytes, the others as header fields
// (pseudo-headers first).
type syntaxCase struct {
	name        string
	proto       string // "HTTP/1.1" or "HTTP/2.0" (also sent over HTTP/3)
	method, uri string
	fields      [][2]string
	err         error // nil: the request goes on to next
}

var smuggled = "GET /papi/secret.txt HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Junk:"

// syntaxCases holds every case of issue 21, finding 1, and the rest of
// the syntax the door checks. Each refused request is refused with 400
// before anything else reads it.
var syntaxCases = []syntaxCase{
	{"plain", "HTTP/1.1", "GET", "/api/x?q=1", nil, nil},
	{"plain h2", "HTTP/2.0", "GET", "/api/x?q=1", nil, nil},
	// The finding's :method and :path.
	{"method carrying a request line", "HTTP/2.0", smuggled, "/api/x", nil, frontdoor.ErrBadMethod},
	{"path carrying a second request", "HTTP/2.0", "GET",
		"/api/a?q HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nPOST /api/capture HTTP/1.1\r\nContent-Length: 200\r\nX-Rest: ", nil, frontdoor.ErrBadTarget},
	{"NUL in the query", "HTTP/2.0", "GET", "/api/x?a=\x00b", nil, frontdoor.ErrBadTarget},
	{"NUL in the query, HTTP/1.1", "HTTP/1.1", "GET", "/api/x?a=\x00b", nil, frontdoor.ErrBadTarget},
	{"CTL in the query", "HTTP/1.1", "GET", "/api/x?a=\x01", nil, frontdoor.ErrBadTarget},
	{"DEL in the query", "HTTP/1.1", "GET", "/api/x?a=\x7f", nil, frontdoor.ErrBadTarget},
	{"CTL in the path", "HTTP/2.0", "GET", "/api/\x1bx", nil, frontdoor.ErrBadTarget},
	{"SP in the path", "HTTP/2.0", "GET", "/api/a b", nil, frontdoor.ErrBadTarget},
	{"LF in the path", "HTTP/2.0", "GET", "/api/a\nb", nil, frontdoor.ErrBadTarget},
	{"empty path", "HTTP/2.0", "GET", "", nil, frontdoor.ErrBadTarget},
	{"method with a space", "HTTP/2.0", "G T", "/api/x", nil, frontdoor.ErrBadMethod},
	{"method with a NUL", "HTTP/1.1", "G\x00T", "/api/x", nil, frontdoor.ErrBadMethod},
	{"method with a separator", "HTTP/1.1", "GE(T", "/api/x", nil, frontdoor.ErrBadMethod},
	{"empty method", "HTTP/2.0", "", "/api/x", nil, frontdoor.ErrBadMethod},
	{"extension method", "HTTP/1.1", "PURGE", "/api/x", nil, nil},
	// Field names and values.
	{"name with CR LF", "HTTP/2.0", "GET", "/api/x", [][2]string{{"x-a\r\nx-b", "1"}}, frontdoor.ErrBadField},
	{"name with a colon", "HTTP/2.0", "GET", "/api/x", [][2]string{{"x:a", "1"}}, frontdoor.ErrBadField},
	{"name with a separator", "HTTP/1.1", "GET", "/api/x", [][2]string{{"X(a)", "1"}}, frontdoor.ErrBadField},
	{"name with a CTL", "HTTP/1.1", "GET", "/api/x", [][2]string{{"X\x01a", "1"}}, frontdoor.ErrBadField},
	{"upper-case name on HTTP/1.1", "HTTP/1.1", "GET", "/api/x", [][2]string{{"X-Up", "1"}}, nil},
	{"value with CR LF", "HTTP/2.0", "GET", "/api/x", [][2]string{{"x-a", "1\r\nx-evil: 2"}}, frontdoor.ErrBadField},
	{"value with a NUL", "HTTP/2.0", "GET", "/api/x", [][2]string{{"x-a", "a\x00b"}}, frontdoor.ErrBadField},
	{"value with a NUL, HTTP/1.1", "HTTP/1.1", "GET", "/api/x", [][2]string{{"X-A", "a\x00b"}}, frontdoor.ErrBadField},
	{"value with a CTL, HTTP/1.1", "HTTP/1.1", "GET", "/api/x", [][2]string{{"X-A", "a\x01b"}}, frontdoor.ErrBadField},
	{"value with DEL, HTTP/1.1", "HTTP/1.1", "GET", "/api/x", [][2]string{{"X-A", "a\x7fb"}}, frontdoor.ErrBadField},
	{"value with HTAB and obs-text", "HTTP/1.1", "GET", "/api/x", [][2]string{{"X-A", "a\tb\xe9"}}, nil},
	// Connection-specific fields on HTTP/2 and HTTP/3.
	{"connection on HTTP/2", "HTTP/2.0", "GET", "/api/x", [][2]string{{"connection", "close"}}, frontdoor.ErrConnField},
	{"keep-alive on HTTP/2", "HTTP/2.0", "GET", "/api/x", [][2]string{{"keep-alive", "timeout=5"}}, frontdoor.ErrConnField},
	{"proxy-connection on HTTP/2", "HTTP/2.0", "GET", "/api/x", [][2]string{{"proxy-connection", "keep-alive"}}, frontdoor.ErrConnField},
	{"transfer-encoding on HTTP/2", "HTTP/2.0", "POST", "/api/x", [][2]string{{"transfer-encoding", "chunked"}}, frontdoor.ErrConnField},
	{"upgrade on HTTP/2", "HTTP/2.0", "GET", "/api/x", [][2]string{{"upgrade", "websocket"}}, frontdoor.ErrConnField},
	{"te gzip on HTTP/2", "HTTP/2.0", "GET", "/api/x", [][2]string{{"te", "gzip"}}, frontdoor.ErrConnField},
	{"te trailers on HTTP/2", "HTTP/2.0", "GET", "/api/x", [][2]string{{"te", "trailers"}}, nil},
	{"connection on HTTP/1.1", "HTTP/1.1", "GET", "/api/x", [][2]string{{"Connection", "keep-alive"}}, nil},
}

// doorFor returns a door with one site, a.test (the default), and a next
// that counts the requests it is given.
func doorFor(t testing.TB) (*frontdoor.Door, func(*route.Site) error, *atomic.Int32) {
	t.Helper()
	table, err := route.NewTable([]*route.Site{{Name: "a.test", Hosts: []string{"a.test"}, Default: true}})
	if err != nil {
		t.Fatal(err)
	}
	var reached atomic.Int32
	return &frontdoor.Door{Sites: table}, func(*route.Site) error { reached.Add(1); return nil }, &reached
}

// TestDoorSyntax: the door refuses, with 400 and before next, what the
// request's syntax does not allow, given the bytes as they came: the
// door's own judgement, whatever an engine's parser let through.
func TestDoorSyntax(t *testing.T) {
	door, next, reached := doorFor(t)
	for _, c := range syntaxCases {
		fields := append([][2]string{{"Host", "a.test"}}, c.fields...)
		x := &rawExchange{method: c.method, uri: c.uri, proto: c.proto, fields: fields}
		before := reached.Load()
		err := door.Serve(x, "", next)
		if !errors.Is(err, c.err) {
			t.Errorf("%s: %v, want %v", c.name, err, c.err)
		}
		if c.err != nil && exchange.StatusOf(err) != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", c.name, exchange.StatusOf(err))
		}
		if went := reached.Load() > before; went != (c.err == nil) {
			t.Errorf("%s: reached next %v, want %v", c.name, went, c.err == nil)
		}
	}
}

// TestDoorConnectionOptions: the fields a client's Connection header
// names are removed before anything else sees the request, and
// Connection keeps only the tokens later steps need; so a header sluice
// sets later (an identity header, X-Forwarded-For) can never be one the
// client named.
func TestDoorConnectionOptions(t *testing.T) {
	door, _, _ := doorFor(t)
	x := &rawExchange{method: "GET", uri: "/", proto: "HTTP/1.1", fields: [][2]string{
		{"Host", "a.test"}, {"Connection", "keep-alive, X-Client-Subject, X-Forwarded-For"},
		{"Connection", "Forwarded, Upgrade"}, {"X-Forwarded-For", "6.6.6.6"}, {"Forwarded", "for=6.6.6.6"},
		{"Upgrade", "websocket"}, {"X-Kept", "1"}}}
	var seen [][2]string
	err := door.Serve(x, "", func(*route.Site) error {
		x.SetRequestHeader("X-Client-Subject", "CN=alice") // as the door's identity header
		seen = append(seen, x.fields...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]string{{"Host", "a.test"}, {"Upgrade", "websocket"}, {"X-Kept", "1"},
		{"Connection", "keep-alive, Upgrade"}, {"X-Client-Subject", "CN=alice"}}
	if len(seen) != len(want) {
		t.Fatalf("fields %q, want %q", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("fields %q, want %q", seen, want)
		}
	}
}

// TestDoorSyntaxEngines sends the cases through every engine, as each
// protocol carries them (HTTP/1.1 cases to the HTTP/1.1 engines, the
// others to the HTTP/2 and HTTP/3 ones): a refused request gets a 400,
// or the engine's own refusal (its 400, a reset stream), and never
// reaches next; the others are served.
func TestDoorSyntaxEngines(t *testing.T) {
	door, next, reached := doorFor(t)
	h := exchange.HandlerFunc(func(x exchange.Exchange) error {
		return door.Serve(x, "", func(s *route.Site) error {
			if err := next(s); err != nil {
				return err
			}
			x.SetStatus(http.StatusOK)
			x.SetBody([]byte("served"))
			return nil
		})
	})
	for _, e := range exchangetest.Engines(t, h) {
		for _, c := range syntaxCases {
			if (c.proto == "HTTP/1.1") != (e.Proto == "HTTP/1.1") {
				continue
			}
			before := reached.Load()
			var status int
			switch e.Proto {
			case "HTTP/1.1":
				status = sendH1(t, e, c)
			case "HTTP/2.0":
				status, _ = sendH2(t, e, c)
			default:
				status, _ = sendH3(t, e, c)
			}
			went := reached.Load() > before
			switch {
			case c.err == nil && (status != 200 || !went):
				t.Errorf("%s: %s: %d (reached next %v), want 200", e.Name, c.name, status, went)
			case c.err != nil && (went || status != 0 && status != 400):
				t.Errorf("%s: %s: %d (reached next %v), want 400 or a reset, and not next", e.Name, c.name, status, went)
			}
		}
	}
}

// sendH1 writes the case as HTTP/1.1 bytes and returns the status, 0
// when the connection ended without one.
func sendH1(t *testing.T, e exchangetest.Engine, c syntaxCase) int {
	t.Helper()
	conn, err := net.DialTimeout("tcp", e.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	b.WriteString(c.method + " " + c.uri + " HTTP/1.1\r\nHost: a.test\r\n")
	for _, f := range c.fields {
		b.WriteString(f[0] + ": " + f[1] + "\r\n")
	}
	b.WriteString("Connection: close\r\n\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return 0
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// pseudo returns the case's header fields for HTTP/2 and HTTP/3, the
// pseudo-headers first, every value as it is; :authority is a.test
// unless the case's fields name one.
func pseudo(c syntaxCase, scheme string) [][2]string {
	authority := "a.test"
	var rest [][2]string
	for _, f := range c.fields {
		if f[0] == ":authority" {
			authority = f[1]
			continue
		}
		rest = append(rest, f)
	}
	f := [][2]string{{":method", c.method}, {":scheme", scheme}, {":authority", authority}, {":path", c.uri}}
	return append(f, rest...)
}

// sendH2 sends the case as one HEADERS frame over cleartext HTTP/2 and
// returns the status and body, status 0 when the stream or the
// connection was reset.
func sendH2(t *testing.T, e exchangetest.Engine, c syntaxCase) (int, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", e.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range pseudo(c, "http") {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	status, body := 0, []byte(nil)
	for range 100 {
		f, err := fr.ReadFrame()
		if err != nil {
			return 0, ""
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.MetaHeadersFrame:
			status, _ = strconv.Atoi(f.PseudoValue("status"))
			if f.StreamEnded() {
				return status, string(body)
			}
		case *http2.DataFrame:
			body = append(body, f.Data()...)
			if f.StreamEnded() {
				return status, string(body)
			}
		case *http2.RSTStreamFrame, *http2.GoAwayFrame:
			return 0, ""
		}
	}
	t.Fatal("no answer in 100 frames")
	return 0, ""
}

// sendH3 sends the case as one HEADERS frame over HTTP/3 and returns the
// status and body, status 0 when the stream or the connection was reset.
func sendH3(t *testing.T, e exchangetest.Engine, c syntaxCase) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := quic.DialAddr(ctx, e.Addr(), &tls.Config{
		InsecureSkipVerify: true, // the engine's throwaway certificate; only the status matters here
		NextProtos:         []string{http3.NextProtoH3},
	}, &quic.Config{HandshakeIdleTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseWithError(0x100, "") // H3_NO_ERROR
	ctl, err := conn.OpenUniStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.Write([]byte{0x00, 0x04, 0x00}); err != nil { // control stream, empty SETTINGS
		t.Fatal(err)
	}
	var hb bytes.Buffer
	enc := qpack.NewEncoder(&hb)
	for _, f := range pseudo(c, "https") {
		enc.WriteField(qpack.HeaderField{Name: f[0], Value: f[1]})
	}
	str, err := conn.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	str.SetDeadline(time.Now().Add(5 * time.Second))
	frame := quicvarint.Append(quicvarint.Append(nil, 0x01), uint64(hb.Len())) // HEADERS
	if _, err := str.Write(append(frame, hb.Bytes()...)); err != nil {
		return 0, ""
	}
	str.Close()
	r := bufio.NewReader(str)
	status, body := 0, []byte(nil)
	for range 100 {
		typ, err := quicvarint.Read(r)
		if err == io.EOF && status != 0 {
			return status, string(body)
		}
		if err != nil {
			return 0, ""
		}
		n, err := quicvarint.Read(r)
		if err != nil || n > 1<<16 {
			return 0, ""
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(r, payload); err != nil {
			return 0, ""
		}
		switch typ {
		case 0x00: // DATA
			body = append(body, payload...)
		case 0x01: // HEADERS
			dec := qpack.NewDecoder().Decode(payload)
			for {
				hf, err := dec()
				if err != nil {
					break
				}
				if hf.Name == ":status" {
					status, _ = strconv.Atoi(hf.Value)
				}
			}
		}
	}
	t.Fatal("no answer in 100 frames")
	return 0, ""
}
