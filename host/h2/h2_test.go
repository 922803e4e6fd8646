package h2_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/h2"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// start serves h with o on loopback and returns the address.
func start(t testing.TB, o h2.Options) (*h2.Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := h2.New(o)
	go srv.Serve(ln)
	t.Cleanup(func() {
		ln.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return srv, ln.Addr().String()
}

// client is a raw HTTP/2 client: frames as the test writes them.
type client struct {
	t   testing.TB
	c   net.Conn
	fr  *http2.Framer
	enc *hpack.Encoder
	buf bytes.Buffer
}

func dial(t testing.TB, addr string) *client {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	cl := &client{t: t, c: c, fr: http2.NewFramer(c, c)}
	cl.fr.AllowIllegalWrites = true
	cl.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	cl.enc = hpack.NewEncoder(&cl.buf)
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := cl.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return cl
}

// block encodes a request's header block.
func (cl *client) block(method, path string, extra ...string) []byte {
	cl.buf.Reset()
	cl.enc.WriteField(hpack.HeaderField{Name: ":method", Value: method})
	cl.enc.WriteField(hpack.HeaderField{Name: ":scheme", Value: "http"})
	cl.enc.WriteField(hpack.HeaderField{Name: ":authority", Value: "a.test"})
	cl.enc.WriteField(hpack.HeaderField{Name: ":path", Value: path})
	for i := 0; i+1 < len(extra); i += 2 {
		cl.enc.WriteField(hpack.HeaderField{Name: extra[i], Value: extra[i+1]})
	}
	return bytes.Clone(cl.buf.Bytes())
}

func (cl *client) request(id uint32, method, path string, end bool, extra ...string) {
	cl.t.Helper()
	if err := cl.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: cl.block(method, path, extra...),
		EndStream: end, EndHeaders: true}); err != nil {
		cl.t.Fatal(err)
	}
}

// until reads frames until match returns true, and returns that frame;
// it fails the test on EOF or timeout.
func (cl *client) until(what string, match func(http2.Frame) bool) http2.Frame {
	cl.t.Helper()
	for {
		f, err := cl.fr.ReadFrame()
		if err != nil {
			cl.t.Fatalf("waiting for %s: %v", what, err)
		}
		if match(f) {
			return f
		}
	}
}

// goAway waits for a GOAWAY and returns its code.
func (cl *client) goAway() http2.ErrCode {
	cl.t.Helper()
	return cl.until("GOAWAY", func(f http2.Frame) bool { _, ok := f.(*http2.GoAwayFrame); return ok }).(*http2.GoAwayFrame).ErrCode
}

// closed reports whether the server closed the connection (EOF or reset)
// before the deadline.
func (cl *client) closed(d time.Duration) bool {
	cl.c.SetReadDeadline(time.Now().Add(d))
	for {
		if _, err := cl.fr.ReadFrame(); err != nil {
			var ne net.Error
			return !(errors.As(err, &ne) && ne.Timeout())
		}
	}
}

var hello = exchange.HandlerFunc(func(x exchange.Exchange) error {
	x.SetResponseHeader("Content-Type", "text/plain")
	x.SetBody([]byte("hello"))
	return nil
})

// TestShutdownFinishesInFlight: Shutdown sends GOAWAY at once, lets the
// stream in flight finish, then closes the connection.
func TestShutdownFinishesInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	srv, addr := start(t, h2.Options{Handler: exchange.HandlerFunc(func(x exchange.Exchange) error {
		exchange.WillBlock(x)
		close(entered)
		<-release
		x.SetBody([]byte("late"))
		return nil
	})})
	cl := dial(t, addr)
	cl.request(1, "GET", "/", true)
	<-entered
	done := make(chan error)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done <- srv.Shutdown(ctx)
	}()
	ga := cl.until("GOAWAY", func(f http2.Frame) bool { _, ok := f.(*http2.GoAwayFrame); return ok }).(*http2.GoAwayFrame)
	if ga.ErrCode != http2.ErrCodeNo || ga.LastStreamID != 1 {
		t.Fatalf("GOAWAY %v last %d", ga.ErrCode, ga.LastStreamID)
	}
	close(release)
	d := cl.until("DATA", func(f http2.Frame) bool { _, ok := f.(*http2.DataFrame); return ok }).(*http2.DataFrame)
	if string(d.Data()) != "late" || !d.StreamEnded() {
		t.Fatalf("in-flight response %q end=%v", d.Data(), d.StreamEnded())
	}
	if !cl.closed(3 * time.Second) {
		t.Fatal("connection still open after its last stream")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestRapidReset: a client that opens and resets streams faster than
// they finish gets GOAWAY ENHANCE_YOUR_CALM (CVE-2023-44487).
func TestRapidReset(t *testing.T) {
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	_, addr := start(t, h2.Options{MaxResets: 10, Handler: exchange.HandlerFunc(func(x exchange.Exchange) error {
		<-block // a handler that takes long: it is running when reset
		return nil
	})})
	cl := dial(t, addr)
	for i := range 20 {
		id := uint32(2*i + 1)
		cl.request(id, "POST", "/", false)
		cl.fr.WriteRSTStream(id, http2.ErrCodeCancel)
	}
	if code := cl.goAway(); code != http2.ErrCodeEnhanceYourCalm {
		t.Fatalf("GOAWAY %v", code)
	}
}

// TestHandlersBounded: streams reset while their handler runs still
// count against the stream cap: more are refused, not started.
func TestHandlersBounded(t *testing.T) {
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	running := make(chan struct{}, 100)
	_, addr := start(t, h2.Options{MaxConcurrentStreams: 4, MaxResets: 1000, Handler: exchange.HandlerFunc(func(x exchange.Exchange) error {
		running <- struct{}{}
		<-block
		return nil
	})})
	cl := dial(t, addr)
	for i := range 4 {
		id := uint32(2*i + 1)
		cl.request(id, "POST", "/", false)
		<-running
		cl.fr.WriteRSTStream(id, http2.ErrCodeCancel)
	}
	cl.request(9, "POST", "/", false)
	rst := cl.until("RST_STREAM 9", func(f http2.Frame) bool {
		r, ok := f.(*http2.RSTStreamFrame)
		return ok && r.StreamID == 9
	}).(*http2.RSTStreamFrame)
	if rst.ErrCode != http2.ErrCodeRefusedStream {
		t.Fatalf("fifth stream: %v", rst.ErrCode)
	}
	if len(running) != 0 {
		t.Fatal("a fifth handler started")
	}
}

// TestContinuationFlood: a header block that never ends is cut off once
// its frames pass the bound, whatever their size (zero-length ones too).
func TestContinuationFlood(t *testing.T) {
	_, addr := start(t, h2.Options{Handler: hello, MaxHeaderBytes: 4 << 10})
	cl := dial(t, addr)
	go func() {
		cl.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: cl.block("GET", "/")})
		for range 20000 {
			if cl.fr.WriteContinuation(1, false, nil) != nil {
				return
			}
		}
	}()
	if code := cl.goAway(); code != http2.ErrCodeEnhanceYourCalm {
		t.Fatalf("GOAWAY %v", code)
	}
}

// TestPingFlood: PING and SETTINGS frames past the bound end the
// connection.
func TestPingFlood(t *testing.T) {
	for _, kind := range []string{"ping", "settings"} {
		t.Run(kind, func(t *testing.T) {
			_, addr := start(t, h2.Options{Handler: hello, MaxControl: 50})
			cl := dial(t, addr)
			go func() {
				for i := range 100 {
					var err error
					if kind == "ping" {
						err = cl.fr.WritePing(false, [8]byte{byte(i)})
					} else {
						err = cl.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 65535})
					}
					if err != nil {
						return
					}
				}
			}()
			if code := cl.goAway(); code != http2.ErrCodeEnhanceYourCalm {
				t.Fatalf("GOAWAY %v", code)
			}
		})
	}
}

func status(cl *client, id uint32) string {
	cl.t.Helper()
	f := cl.until("HEADERS", func(f http2.Frame) bool {
		h, ok := f.(*http2.MetaHeadersFrame)
		return ok && h.StreamID == id
	}).(*http2.MetaHeadersFrame)
	return f.PseudoValue("status")
}

// TestHeaderListLimits: a header list over MaxHeaderBytes gets 431, also
// when it is small on the wire: one large field in the dynamic table
// referenced again and again (an HPACK bomb) counts at its decoded size.
func TestHeaderListLimits(t *testing.T) {
	_, addr := start(t, h2.Options{Handler: hello, MaxHeaderBytes: 4 << 10})
	cl := dial(t, addr)
	cl.request(1, "GET", "/", true, "x-big", strings.Repeat("a", 8<<10))
	if s := status(cl, 1); s != "431" {
		t.Fatalf("large field: %s", s)
	}
	cl.request(3, "GET", "/", true, "x-mid", strings.Repeat("b", 3000))
	if s := status(cl, 3); s != "200" {
		t.Fatalf("a field under the limit: %s", s)
	}
	// The second block references x-mid from the dynamic table: a few
	// bytes on the wire, 3 KiB each once decoded.
	extra := []string{}
	for range 20 {
		extra = append(extra, "x-mid", strings.Repeat("b", 3000))
	}
	blk := cl.block("GET", "/", extra...)
	if len(blk) > 200 {
		t.Fatalf("the bomb is %d bytes on the wire", len(blk))
	}
	cl.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 5, BlockFragment: blk, EndStream: true, EndHeaders: true})
	if s := status(cl, 5); s != "431" {
		t.Fatalf("HPACK bomb: %s", s)
	}
	cl.request(7, "GET", "/", true)
	if s := status(cl, 7); s != "200" {
		t.Fatalf("after 431s, the connection still serves: %s", s)
	}
}

// TestTimeouts: a connection that never sends its preface, one that
// stops halfway through a header block, and one left idle are closed.
func TestTimeouts(t *testing.T) {
	_, addr := start(t, h2.Options{Handler: hello, ReadHeaderTimeout: 200 * time.Millisecond, IdleTimeout: 300 * time.Millisecond})
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	silent.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.Copy(io.Discard, silent); err != nil {
		t.Fatalf("no preface: %v", err)
	}

	cl := dial(t, addr)
	cl.request(1, "GET", "/", true)
	status(cl, 1)
	cl.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: cl.block("GET", "/")}) // no END_HEADERS
	if !cl.closed(3 * time.Second) {
		t.Fatal("a header block left open keeps the connection")
	}

	idle := dial(t, addr)
	idle.request(1, "GET", "/", true)
	status(idle, 1)
	if !idle.closed(3 * time.Second) {
		t.Fatal("an idle connection stays open")
	}
}

// TestFlowControl: a response larger than the client's window waits for
// WINDOW_UPDATE and never overruns the window.
func TestFlowControl(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 10<<10) // 160 KiB
	_, addr := start(t, h2.Options{Handler: exchange.HandlerFunc(func(x exchange.Exchange) error {
		x.SetBody(body)
		return nil
	})})
	cl := dial(t, addr)
	cl.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1000})
	cl.request(1, "GET", "/", true)
	var got []byte
	window := 1000
	for {
		f := cl.until("DATA", func(f http2.Frame) bool { _, ok := f.(*http2.DataFrame); return ok }).(*http2.DataFrame)
		window -= len(f.Data())
		if window < 0 {
			t.Fatalf("server overran the stream window by %d", -window)
		}
		got = append(got, f.Data()...)
		if f.StreamEnded() {
			break
		}
		if window == 0 {
			cl.fr.WriteWindowUpdate(1, 7000)
			cl.fr.WriteWindowUpdate(0, 7000)
			window = 7000
		}
	}
	if !bytes.Equal(got, body) {
		t.Fatalf("body: %d bytes, want %d", len(got), len(body))
	}
}
