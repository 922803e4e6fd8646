package proxy_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/proxy"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"golang.org/x/net/websocket"
)

// h2ws is a raw HTTP/2 client that opens WebSockets with extended CONNECT
// (RFC 8441) on one stream, and speaks RFC 6455 frames on it.
type h2ws struct {
	t  *testing.T
	c  net.Conn
	fr *http2.Framer
	in []byte // DATA received, not yet parsed
}

func dialH2WS(t *testing.T, e exchangetest.Engine) *h2ws {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(e.URL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	w := &h2ws{t: t, c: c, fr: http2.NewFramer(c, c)}
	w.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	io.WriteString(c, http2.ClientPreface)
	w.fr.WriteSettings()
	f, err := w.fr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok {
		t.Fatalf("first frame %v", f)
	}
	if v, _ := sf.Value(http2.SettingEnableConnectProtocol); v != 1 {
		t.Fatal("SETTINGS_ENABLE_CONNECT_PROTOCOL not advertised")
	}
	w.fr.WriteSettingsAck()
	return w
}

// open sends the extended CONNECT on stream 1 and returns the answer's
// status.
func (w *h2ws) open(path string) string {
	w.t.Helper()
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for _, f := range [][2]string{{":method", "CONNECT"}, {":protocol", "websocket"}, {":scheme", "http"},
		{":path", path}, {":authority", "example.com"}, {"sec-websocket-version", "13"}, {"origin", "http://example.com/"}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := w.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b.Bytes(), EndHeaders: true}); err != nil {
		w.t.Fatal(err)
	}
	for {
		f, err := w.fr.ReadFrame()
		if err != nil {
			w.t.Fatal(err)
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			for _, hf := range f.RegularFields() {
				if strings.HasPrefix(hf.Name, "sec-websocket-accept") || hf.Name == "upgrade" || hf.Name == "connection" {
					w.t.Errorf("HTTP/1.1 handshake field %q reached the HTTP/2 client", hf.Name)
				}
			}
			return f.PseudoValue("status")
		case *http2.RSTStreamFrame:
			w.t.Fatalf("RST_STREAM %v", f.ErrCode)
		}
	}
}

// send writes a masked text frame, in DATA frames within the initial
// stream window (the server returns credit as it reads).
func (w *h2ws) send(msg string) {
	w.t.Helper()
	hdr := []byte{0x81}
	switch n := len(msg); {
	case n < 126:
		hdr = append(hdr, 0x80|byte(n))
	case n < 1<<16:
		hdr = append(hdr, 0x80|126)
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr = append(hdr, 0x80|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	mask := [4]byte{1, 2, 3, 4}
	frame := append(hdr, mask[:]...)
	for i := 0; i < len(msg); i++ {
		frame = append(frame, msg[i]^mask[i%4])
	}
	for p := frame; len(p) > 0; {
		n := min(len(p), 16<<10)
		if err := w.fr.WriteData(1, false, p[:n]); err != nil {
			w.t.Fatal(err)
		}
		p = p[n:]
	}
}

// data reads one more DATA frame's payload, giving the credit back; ended
// is true at END_STREAM or RST_STREAM.
func (w *h2ws) data() (ended bool) {
	w.t.Helper()
	for {
		f, err := w.fr.ReadFrame()
		if err != nil {
			w.t.Fatal(err)
		}
		switch f := f.(type) {
		case *http2.DataFrame:
			if f.StreamID != 1 {
				continue
			}
			w.in = append(w.in, f.Data()...)
			if n := len(f.Data()); n > 0 {
				w.fr.WriteWindowUpdate(0, uint32(n))
				w.fr.WriteWindowUpdate(1, uint32(n))
			}
			return f.StreamEnded()
		case *http2.RSTStreamFrame:
			return true
		}
	}
}

// receive reads one unmasked text frame.
func (w *h2ws) receive() string {
	w.t.Helper()
	for {
		if len(w.in) >= 2 {
			n, off := int(w.in[1]&0x7f), 2
			switch {
			case n == 126 && len(w.in) >= 4:
				n, off = int(binary.BigEndian.Uint16(w.in[2:])), 4
			case n == 127 && len(w.in) >= 10:
				n, off = int(binary.BigEndian.Uint64(w.in[2:])), 10
			}
			if (off > 2 || n < 126) && len(w.in) >= off+n {
				msg := string(w.in[off : off+n])
				w.in = w.in[off+n:]
				return msg
			}
		}
		if w.data() {
			w.t.Fatal("stream ended before a whole message")
		}
	}
}

// wsOverH2 opens a WebSocket with extended CONNECT and checks that each
// message comes back.
func wsOverH2(t *testing.T, e exchangetest.Engine, path string, msgs []string) {
	w := dialH2WS(t, e)
	if s := w.open(path); s != "200" {
		t.Fatalf("status %s, want 200", s)
	}
	for _, msg := range msgs {
		w.send(msg)
		if got := w.receive(); got != msg {
			t.Fatalf("echo: %d bytes, want %d", len(got), len(msg))
		}
	}
}

// TestWebSocketH2Ends: over HTTP/2, the upstream closing the WebSocket
// ends the stream; the client resetting the stream closes the upstream
// connection; a refusal from the upstream reaches the client as is, and
// a 200 from an upstream that does not switch is no tunnel (501).
func TestWebSocketH2Ends(t *testing.T) {
	closed := make(chan struct{}, 1)
	ws := websocket.Handler(func(c *websocket.Conn) {
		if c.Request().URL.Path == "/bye" {
			websocket.Message.Send(c, "bye")
			return
		}
		var msg string
		for websocket.Message.Receive(c, &msg) == nil {
		}
		closed <- struct{}{}
	})
	be := backend(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/denied":
			http.Error(w, "no", http.StatusForbidden)
		case "/page":
			io.WriteString(w, "a page")
		default:
			ws.ServeHTTP(w, r)
		}
	})
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: be.URL}}})
	var e exchangetest.Engine
	for _, x := range exchangetest.Engines(t, p) {
		if x.Name == "h2" {
			e = x
		}
	}
	if e.Name == "" {
		t.Fatal("no h2 engine")
	}
	t.Run("upstream closes", func(t *testing.T) {
		w := dialH2WS(t, e)
		if s := w.open("/bye"); s != "200" {
			t.Fatalf("status %s", s)
		}
		if got := w.receive(); got != "bye" {
			t.Fatalf("got %q", got)
		}
		for !w.data() {
		}
	})
	t.Run("client resets", func(t *testing.T) {
		w := dialH2WS(t, e)
		if s := w.open("/wait"); s != "200" {
			t.Fatalf("status %s", s)
		}
		w.fr.WriteRSTStream(1, http2.ErrCodeCancel)
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Fatal("the upstream WebSocket outlived the stream's reset")
		}
	})
	for path, want := range map[string]string{"/denied": "403", "/page": "501"} {
		t.Run(path, func(t *testing.T) {
			w := dialH2WS(t, e)
			if s := w.open(path); s != want {
				t.Fatalf("status %s, want %s", s, want)
			}
		})
	}
}
