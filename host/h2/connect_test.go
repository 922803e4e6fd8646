package h2_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/h2"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// headers sends a header block of the fields given, names and values in
// turn.
func (cl *client) headers(id uint32, end bool, kv ...string) {
	cl.t.Helper()
	cl.buf.Reset()
	for i := 0; i+1 < len(kv); i += 2 {
		cl.enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	if err := cl.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: bytes.Clone(cl.buf.Bytes()),
		EndStream: end, EndHeaders: true}); err != nil {
		cl.t.Fatal(err)
	}
}

func (cl *client) reset(id uint32) http2.ErrCode {
	cl.t.Helper()
	return cl.until("RST_STREAM", func(f http2.Frame) bool {
		r, ok := f.(*http2.RSTStreamFrame)
		return ok && r.StreamID == id
	}).(*http2.RSTStreamFrame).ErrCode
}

var wsConnect = []string{":method", "CONNECT", ":protocol", "websocket", ":scheme", "https", ":path", "/chat", ":authority", "a.test"}

// TestConnectProtocolSetting: the server advertises extended CONNECT
// (RFC 8441, 3) unless told not to.
func TestConnectProtocolSetting(t *testing.T) {
	for _, off := range []bool{false, true} {
		_, addr := start(t, h2.Options{Handler: hello, NoConnectProtocol: off})
		cl := dial(t, addr)
		f := cl.until("SETTINGS", func(f http2.Frame) bool { _, ok := f.(*http2.SettingsFrame); return ok }).(*http2.SettingsFrame)
		v, ok := f.Value(http2.SettingEnableConnectProtocol)
		if got := ok && v == 1; got == off {
			t.Errorf("NoConnectProtocol=%v: SETTINGS_ENABLE_CONNECT_PROTOCOL %v (%d)", off, ok, v)
		}
	}
}

// TestExtendedConnectMalformed: a request with :protocol that RFC 8441
// (4) and RFC 9113 (8.3) do not allow is reset with PROTOCOL_ERROR, and
// its handler never runs; a plain CONNECT reaches the handler as before,
// with no protocol.
func TestExtendedConnectMalformed(t *testing.T) {
	ran := make(chan string, 16)
	h := exchange.HandlerFunc(func(x exchange.Exchange) error {
		ran <- string(x.Method()) + " " + string(exchange.ConnectProtocol(x))
		x.SetStatus(405)
		return nil
	})
	without := func(name string) []string {
		var kv []string
		for i := 0; i < len(wsConnect); i += 2 {
			if wsConnect[i] != name {
				kv = append(kv, wsConnect[i], wsConnect[i+1])
			}
		}
		return kv
	}
	with := func(name, value string) []string {
		kv := append([]string(nil), wsConnect...)
		for i := 0; i < len(kv); i += 2 {
			if kv[i] == name {
				kv[i+1] = value
			}
		}
		return kv
	}
	for _, tc := range []struct {
		name string
		kv   []string
		off  bool
	}{
		{"no :path", without(":path"), false},
		{"no :scheme", without(":scheme"), false},
		{"no :authority", without(":authority"), false},
		{"empty :path", with(":path", ""), false},
		{"empty :protocol", with(":protocol", ""), false},
		{":protocol with GET", with(":method", "GET"), false},
		{"not advertised", wsConnect, true},
		{"twice", append(append([]string(nil), wsConnect[:4]...), append([]string{":protocol", "websocket"}, wsConnect[4:]...)...), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, addr := start(t, h2.Options{Handler: h, NoConnectProtocol: tc.off})
			cl := dial(t, addr)
			cl.headers(1, false, tc.kv...)
			if code := cl.reset(1); code != http2.ErrCodeProtocol {
				t.Fatalf("RST_STREAM %v, want PROTOCOL_ERROR", code)
			}
			select {
			case got := <-ran:
				t.Fatalf("handler ran: %s", got)
			default:
			}
		})
	}
	_, addr := start(t, h2.Options{Handler: h})
	cl := dial(t, addr)
	cl.headers(1, true, ":method", "CONNECT", ":authority", "a.test:443")
	if s := status(cl, 1); s != "405" {
		t.Fatalf("plain CONNECT: status %s", s)
	}
	if got := <-ran; got != "CONNECT " {
		t.Fatalf("plain CONNECT seen as %q", got)
	}
}

// TestExtendedConnectNotTaken: a handler that answers an extended CONNECT
// with 2xx without taking the stream would tell the client that a tunnel
// opened; the engine answers 501 instead. Other statuses go out as set.
func TestExtendedConnectNotTaken(t *testing.T) {
	_, addr := start(t, h2.Options{Handler: exchange.HandlerFunc(func(x exchange.Exchange) error {
		if string(x.Path()) == "/404" {
			x.SetStatus(404)
		}
		x.SetBody([]byte("a page"))
		return nil
	})})
	cl := dial(t, addr)
	cl.headers(1, false, wsConnect...)
	if s := status(cl, 1); s != "501" {
		t.Fatalf("status %s, want 501", s)
	}
	cl.headers(3, false, ":method", "CONNECT", ":protocol", "websocket", ":scheme", "https", ":path", "/404", ":authority", "a.test")
	if s := status(cl, 3); s != "404" {
		t.Fatalf("status %s, want 404", s)
	}
}

func (cl *client) data(id uint32) *http2.DataFrame {
	cl.t.Helper()
	return cl.until("DATA", func(f http2.Frame) bool {
		d, ok := f.(*http2.DataFrame)
		return ok && d.StreamID == id
	}).(*http2.DataFrame)
}

// TestExtendedConnectTunnel: Upgrade answers 200 and gives the handler
// the stream as a conn: the client's DATA are its reads, its writes are
// DATA; the client's END_STREAM is EOF, and the conn's Close ends the
// stream. Larger than a window, the echo waits on flow control.
func TestExtendedConnectTunnel(t *testing.T) {
	_, addr := start(t, h2.Options{StreamWindow: 16 << 10, ConnWindow: 64 << 10, Handler: exchange.HandlerFunc(func(x exchange.Exchange) error {
		if string(exchange.ConnectProtocol(x)) != "websocket" || string(x.Method()) != "CONNECT" || string(x.Path()) != "/chat" {
			return errors.New("not seen as extended CONNECT")
		}
		x.SetResponseHeader("Sec-WebSocket-Protocol", "chat")
		return x.Upgrade(func(c net.Conn, r io.Reader) {
			_, _ = io.Copy(c, r)
		})
	})})
	cl := dial(t, addr)
	cl.headers(1, false, wsConnect...)
	h := cl.until("HEADERS", func(f http2.Frame) bool { _, ok := f.(*http2.MetaHeadersFrame); return ok }).(*http2.MetaHeadersFrame)
	if h.PseudoValue("status") != "200" || h.StreamEnded() || len(h.RegularFields()) == 0 {
		t.Fatalf("answer: status %s, ended %v, %v", h.PseudoValue("status"), h.StreamEnded(), h.Fields)
	}
	// 64 KiB in 4 KiB steps: 4 stream windows each way, credit returned
	// as the data is read.
	msg := bytes.Repeat([]byte("0123456789abcdef"), 4<<10)
	var got []byte
	for p := msg; len(p) > 0; p = p[4<<10:] {
		if err := cl.fr.WriteData(1, false, p[:4<<10]); err != nil {
			t.Fatal(err)
		}
		for want := len(got) + 4<<10; len(got) < want; {
			f, err := cl.fr.ReadFrame()
			if err != nil {
				t.Fatalf("after %d bytes: %v", len(got), err)
			}
			if d, ok := f.(*http2.DataFrame); ok && d.StreamID == 1 && len(d.Data()) > 0 {
				got = append(got, d.Data()...)
				cl.fr.WriteWindowUpdate(0, uint32(len(d.Data())))
				cl.fr.WriteWindowUpdate(1, uint32(len(d.Data())))
			}
		}
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("echo differs")
	}
	cl.fr.WriteData(1, true, nil)
	if d := cl.data(1); !d.StreamEnded() || len(d.Data()) != 0 {
		t.Fatalf("want an empty DATA with END_STREAM, got %d bytes, ended %v", len(d.Data()), d.StreamEnded())
	}
}

// TestExtendedConnectReset: the client's RST_STREAM fails the tunnel's
// reads, so that the handler ends.
func TestExtendedConnectReset(t *testing.T) {
	done := make(chan error, 1)
	_, addr := start(t, h2.Options{Handler: exchange.HandlerFunc(func(x exchange.Exchange) error {
		return x.Upgrade(func(c net.Conn, r io.Reader) {
			_, err := io.ReadAll(r)
			done <- err
		})
	})})
	cl := dial(t, addr)
	cl.headers(1, false, wsConnect...)
	if s := status(cl, 1); s != "200" {
		t.Fatalf("status %s", s)
	}
	cl.fr.WriteRSTStream(1, http2.ErrCodeCancel)
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("read ended cleanly after a reset")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the tunnel outlived its stream's reset")
	}
}
