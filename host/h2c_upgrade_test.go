package host

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/proxy"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestH2CUpgrade: on an h2c listener with the sluice engine, an HTTP/1.1
// request with Upgrade: h2c gets 101, and its answer comes on stream 1 of
// the HTTP/2 connection that follows, which then serves more streams.
// Without HTTP2-Settings, the request is served over HTTP/1.1.
func TestH2CUpgrade(t *testing.T) {
	addr := tlsFreeAddr(t)
	s := &config.Site{Name: "p.test", Listen: []string{addr}, Routes: []*config.Route{{Path: "/", Kind: "proxy", Blocks: map[string]config.Block{"proxy": &proxy.Options{}}}}}
	l := tlsListenerFor(addr, false, s)
	l.H2C, l.HTTP2Engine = true, "sluice"
	tlsStart(t, &config.Config{Sites: []*config.Site{s}, Listeners: []*config.Listener{l}})

	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		return c, bufio.NewReader(c)
	}

	c, br := dial()
	io.WriteString(c, "GET /up HTTP/1.1\r\nHost: p.test\r\nConnection: Upgrade, HTTP2-Settings\r\n"+
		"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\nX-Client-Subject: forged\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 101 || resp.Header.Get("Upgrade") != "h2c" {
		t.Fatalf("upgrade: %d %v", resp.StatusCode, resp.Header)
	}
	io.WriteString(c, http2.ClientPreface)
	fr := http2.NewFramer(c, br)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	fr.WriteSettings()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "p.test"}, {":path", "/two"}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
	bodies := map[uint32]string{}
	for ended := 0; ended < 2; {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("after upgrade: %v (%v)", err, bodies)
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			if f.PseudoValue("status") != "200" {
				t.Fatalf("stream %d: status %s", f.StreamID, f.PseudoValue("status"))
			}
		case *http2.DataFrame:
			bodies[f.StreamID] += string(f.Data())
			if f.StreamEnded() {
				ended++
			}
		}
	}
	// The request's own fields carry over (X-Client-Subject is not
	// stripped: no site here has client_auth).
	if bodies[1] != "proto=HTTP/2.0 tls=false host=p.test id=forged" {
		t.Errorf("stream 1: %q", bodies[1])
	}
	if !strings.Contains(bodies[3], "proto=HTTP/2.0") {
		t.Errorf("stream 3: %q", bodies[3])
	}

	c2, br2 := dial()
	io.WriteString(c2, "GET / HTTP/1.1\r\nHost: p.test\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n")
	resp, err = http.ReadResponse(br2, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode != 200 || !strings.Contains(string(b), "proto=HTTP/1.1") {
		t.Fatalf("without HTTP2-Settings: %d %q", resp.StatusCode, b)
	}
}
