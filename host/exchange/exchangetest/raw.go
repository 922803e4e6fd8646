package exchangetest

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// RawGet sends GET path to an engine with the header fields given, byte
// for byte as far as its protocol allows (Go's clients canonicalize
// names and drop an empty User-Agent), and returns the status and body.
// Over HTTP/1.1, extra is written as is after the fields (for folded or
// malformed lines) and the connection is closed after one request; over
// HTTP/2 and HTTP/3 a "Host" field is sent as :authority, names in
// lower case, and extra is not sent (over HTTP/3 :authority is the
// engine's address when fields have no Host).
func RawGet(t testing.TB, e Engine, path string, fields [][2]string, extra string) (int, []byte) {
	t.Helper()
	if e.Proto == "HTTP/3.0" {
		return rawH3(t, e, path, fields)
	}
	c, err := net.DialTimeout("tcp", e.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if e.Proto == "HTTP/2.0" {
		return rawH2C(t, c, path, fields)
	}
	var b strings.Builder
	b.WriteString("GET " + path + " HTTP/1.1\r\n")
	for _, f := range fields {
		b.WriteString(f[0] + ": " + f[1] + "\r\n")
	}
	b.WriteString(extra)
	b.WriteString("Connection: close\r\n\r\n")
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

// rawH2C sends one GET over HTTP/2 with prior knowledge.
func rawH2C(t testing.TB, c net.Conn, path string, fields [][2]string) (int, []byte) {
	t.Helper()
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	enc.WriteField(hpack.HeaderField{Name: ":method", Value: "GET"})
	enc.WriteField(hpack.HeaderField{Name: ":scheme", Value: "http"})
	enc.WriteField(hpack.HeaderField{Name: ":path", Value: path})
	for _, f := range fields {
		if strings.EqualFold(f[0], "host") {
			enc.WriteField(hpack.HeaderField{Name: ":authority", Value: f[1]})
			continue
		}
		enc.WriteField(hpack.HeaderField{Name: strings.ToLower(f[0]), Value: f[1]})
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	status, body := 0, []byte(nil)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("read frame: %v", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.MetaHeadersFrame:
			if s := f.PseudoValue("status"); s != "" {
				for _, d := range s {
					status = status*10 + int(d-'0')
				}
			}
			if f.StreamEnded() {
				return status, body
			}
		case *http2.DataFrame:
			body = append(body, f.Data()...)
			if f.StreamEnded() {
				return status, body
			}
		case *http2.RSTStreamFrame:
			t.Fatalf("stream reset: %v", f.ErrCode)
		case *http2.GoAwayFrame:
			t.Fatalf("goaway: %v", f.ErrCode)
		}
	}
}
