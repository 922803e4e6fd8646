package proxy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/proxy"
)

// headUpstream is an HTTP/1.1 upstream that records the request head it
// reads, byte for byte, and answers 200 "ok".
func headUpstream(t *testing.T) (string, <-chan []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	heads := make(chan []byte, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				br := bufio.NewReader(c)
				var head []byte
				for len(head) < 64<<10 {
					line, err := br.ReadSlice('\n')
					head = append(head, line...)
					if err != nil {
						return
					}
					if len(line) <= 2 && bytes.HasSuffix(head, []byte("\r\n\r\n")) {
						break
					}
				}
				select {
				case heads <- head:
				default:
				}
				c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"))
			}()
		}
	}()
	return "http://" + ln.Addr().String(), heads
}

// headFields splits a request head into its field lines, each as
// [name, value] with the value exactly as written after ": ".
func headFields(t *testing.T, head []byte) [][2]string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(string(head), "\r\n\r\n"), "\r\n")
	var out [][2]string
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ":")
		if !ok || !strings.HasPrefix(v, " ") {
			t.Fatalf("upstream got a line not of the form \"Name: value\": %q", l)
		}
		out = append(out, [2]string{k, v[1:]})
	}
	return out
}

// sent are request fields that a lossy parser alters: a Cookie with pairs
// a cookie parser drops, empty special fields, a repeated field, values
// with a tab, quotes and obs-text.
var sent = [][2]string{
	{"Host", "example.com"},
	{"User-Agent", ""},
	{"Cookie", `a=1; c="q\"x"; d=v\w`},
	{"X-Custom", "one"},
	{"x-custom", "two"},
	{"Content-Type", ""},
	{"X-Odd", "a\tb ,;= \"~!\" \xe2\x82\xac"},
	{"Accept", "*/*"},
}

// TestForwardAsSent: the client's end-to-end fields reach an HTTP/1.1
// upstream byte for byte from every engine: every Cookie pair, empty
// fields as empty fields, repeated fields in order, odd but legal values.
func TestForwardAsSent(t *testing.T) {
	url, heads := headUpstream(t)
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: url}}})
	engines(t, p, func(t *testing.T, e exchangetest.Engine) {
		status, body := exchangetest.RawGet(t, e, "/fwd", sent, "")
		if status != 200 || string(body) != "ok" {
			t.Fatalf("status %d: %s", status, body)
		}
		var head []byte
		select {
		case head = <-heads:
		case <-time.After(5 * time.Second):
			t.Fatal("upstream saw no request")
		}
		got := headFields(t, head)
		for _, name := range []string{"User-Agent", "Cookie", "X-Custom", "Content-Type", "X-Odd", "Accept"} {
			var want, have []string
			for _, f := range sent {
				if strings.EqualFold(f[0], name) {
					want = append(want, f[1])
				}
			}
			for _, f := range got {
				if strings.EqualFold(f[0], name) {
					have = append(have, f[1])
				}
			}
			if strings.Join(have, "\x00") != strings.Join(want, "\x00") || len(have) != len(want) {
				t.Errorf("%s: upstream got %q, want %q\n%s", name, have, want, head)
			}
		}
		if e.Name == "fast" {
			// Names as sent, too, where the engine keeps them.
			for _, name := range []string{"x-custom", "X-Custom", "X-Odd"} {
				if !bytes.Contains(head, []byte("\r\n"+name+": ")) {
					t.Errorf("%q not forwarded as sent:\n%s", name, head)
				}
			}
		}
	})
}

// TestForwardAsSentH2Upstream: the same fields reach an HTTP/2 upstream
// with every Cookie pair (sent as crumbs, RFC 9113, 8.2.3, and joined
// again by the upstream), empty fields and repeated ones in order. Go's
// HTTP/2 client omits an empty User-Agent, the one field not checked.
func TestForwardAsSentH2Upstream(t *testing.T) {
	url := h2cBackend(t, func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(r.Header)
	})
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: url}}})
	engines(t, p, func(t *testing.T, e exchangetest.Engine) {
		status, body := exchangetest.RawGet(t, e, "/fwd", sent, "")
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		var got http.Header
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		for _, name := range []string{"Cookie", "X-Custom", "Content-Type", "X-Odd", "Accept"} {
			var want []string
			for _, f := range sent {
				if strings.EqualFold(f[0], name) {
					want = append(want, f[1])
				}
			}
			have := got.Values(name)
			if strings.Join(have, "\x00") != strings.Join(want, "\x00") || len(have) != len(want) {
				t.Errorf("%s: upstream got %q, want %q", name, have, want)
			}
		}
	})
}
