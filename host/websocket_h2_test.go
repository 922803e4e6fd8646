package host

import (
	"bytes"
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"golang.org/x/net/websocket"
)

const wsH2Config = `
listener "127.0.0.1:PORT" {
  h2c          = true
  http2_engine = "sluice"
}
site "*" {
  listen = ["127.0.0.1:PORT"]
  route "/ws" {
    proxy {
      upstreams = ["BACKEND"]
    }
  }
  route "/hello" {
    respond { body = "hello" }
  }
}
`

// TestWebSocketOverH2: through the whole dispatch (front door, routing),
// an extended CONNECT (RFC 8441) to a proxy route opens a WebSocket to
// the upstream; to a route whose handler has no tunnel (respond), it gets
// 501 rather than a 200 that would look like an open tunnel.
func TestWebSocketOverH2(t *testing.T) {
	be := httptest.NewServer(websocket.Handler(func(c *websocket.Conn) {
		var msg string
		for websocket.Message.Receive(c, &msg) == nil && websocket.Message.Send(c, msg) == nil {
		}
	}))
	t.Cleanup(be.Close)
	base := startConfig(t, strings.ReplaceAll(wsH2Config, "BACKEND", be.URL)).URL
	for _, tc := range []struct{ path, status string }{{"/ws", "200"}, {"/hello", "501"}} {
		c, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fr := http2.NewFramer(c, c)
		fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
		io.WriteString(c, http2.ClientPreface)
		fr.WriteSettings()
		var b bytes.Buffer
		enc := hpack.NewEncoder(&b)
		for _, f := range [][2]string{{":method", "CONNECT"}, {":protocol", "websocket"}, {":scheme", "http"},
			{":path", tc.path}, {":authority", "a.test"}, {"sec-websocket-version", "13"}, {"origin", "http://a.test/"}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b.Bytes(), EndHeaders: true})
		var status string
		for status == "" {
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatalf("%s: %v", tc.path, err)
			}
			if h, ok := f.(*http2.MetaHeadersFrame); ok {
				status = h.PseudoValue("status")
			}
		}
		if status != tc.status {
			t.Fatalf("%s: status %s, want %s", tc.path, status, tc.status)
		}
		if status != "200" {
			continue
		}
		// A masked text frame "hi"; the echo comes back unmasked.
		fr.WriteData(1, false, []byte{0x81, 0x82, 1, 2, 3, 4, 'h' ^ 1, 'i' ^ 2})
		var got []byte
		for len(got) < 4 {
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatal(err)
			}
			if d, ok := f.(*http2.DataFrame); ok {
				got = append(got, d.Data()...)
			}
		}
		if string(got) != "\x81\x02hi" {
			t.Fatalf("echo %q", got)
		}
	}
}
