package exchange_test

import (
	"bufio"
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/valyala/fasthttp"
)

// oddFields are request header fields that a lossy parser alters: a
// Cookie with pairs a cookie parser drops, empty special fields, a
// repeated field, values with tabs, quotes and obs-text.
var oddFields = [][2]string{
	{"Host", "example.com"},
	{"User-Agent", ""},
	{"Cookie", `a=1; c="q\"x"; d=v\w`},
	{"X-Custom", "one"},
	{"x-custom", "two"},
	{"Content-Type", ""},
	{"X-Odd", "a\tb ,;= \"~!\" \xe2\x82\xac"},
	{"Accept", "*/*"},
}

// headerView is what a handler saw of the request header.
type headerView struct {
	Fields  map[string][]string // lower-case name → values, in order
	Present map[string]bool     // RequestHeader(name) != nil
	First   map[string]string   // RequestHeader(name)
}

func viewHandler(edit func(x exchange.Exchange)) exchange.Handler {
	return exchange.HandlerFunc(func(x exchange.Exchange) error {
		if edit != nil {
			edit(x)
		}
		v := headerView{Fields: map[string][]string{}, Present: map[string]bool{}, First: map[string]string{}}
		x.VisitRequestHeaders(func(k, val []byte) {
			n := strings.ToLower(string(k))
			v.Fields[n] = append(v.Fields[n], string(val))
		})
		for _, n := range []string{"User-Agent", "user-agent", "Cookie", "X-Custom", "Content-Type", "X-Odd", "X-Missing", "X-Added"} {
			b := x.RequestHeader(n)
			v.Present[n], v.First[n] = b != nil, string(b)
		}
		out, err := json.Marshal(v)
		if err != nil {
			return err
		}
		x.SetResponseHeader("Content-Type", "application/json")
		x.SetBody(out)
		return nil
	})
}

// rawRequest sends a GET with fields, byte for byte, and returns the body.
func rawRequest(t *testing.T, e exchangetest.Engine, fields [][2]string, extra string) []byte {
	t.Helper()
	status, body := exchangetest.RawGet(t, e, "/h", fields, extra)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	return body
}

func decodeView(t *testing.T, body []byte) headerView {
	t.Helper()
	var v headerView
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return v
}

func wantValues(t *testing.T, v headerView, name string, want ...string) {
	t.Helper()
	got := v.Fields[name]
	if len(got) != len(want) {
		t.Errorf("%s: visited %q, want %q", name, got, want)
		return
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: visited %q, want %q", name, got, want)
			return
		}
	}
}

func wantFirst(t *testing.T, v headerView, name, want string) {
	t.Helper()
	if !v.Present[name] || v.First[name] != want {
		t.Errorf("RequestHeader(%q) = %q (present %v), want %q present", name, v.First[name], v.Present[name], want)
	}
}

// TestRequestHeadersAsSent: handlers and filters see the request header
// as the client sent it on every engine: every Cookie pair, empty fields
// present with an empty value, repeated fields in order.
func TestRequestHeadersAsSent(t *testing.T) {
	for _, e := range exchangetest.Engines(t, viewHandler(nil)) {
		t.Run(e.Name, func(t *testing.T) {
			v := decodeView(t, rawRequest(t, e, oddFields, ""))
			wantValues(t, v, "user-agent", "")
			wantValues(t, v, "cookie", `a=1; c="q\"x"; d=v\w`)
			wantValues(t, v, "x-custom", "one", "two")
			wantValues(t, v, "content-type", "")
			wantValues(t, v, "x-odd", "a\tb ,;= \"~!\" \xe2\x82\xac")
			wantValues(t, v, "host", "example.com")
			wantFirst(t, v, "User-Agent", "")
			wantFirst(t, v, "user-agent", "")
			wantFirst(t, v, "Content-Type", "")
			wantFirst(t, v, "Cookie", `a=1; c="q\"x"; d=v\w`)
			wantFirst(t, v, "X-Custom", "one")
			if v.Present["X-Missing"] {
				t.Errorf("X-Missing present")
			}
		})
	}
}

// TestRequestHeadersEdited: Set, Add and Del on the request header are
// honoured exactly, and the fields not edited stay as sent.
func TestRequestHeadersEdited(t *testing.T) {
	edit := func(x exchange.Exchange) {
		x.SetRequestHeader("X-Custom", "new")
		x.DelRequestHeader("X-Odd")
		x.AddRequestHeader("X-Added", "1")
		x.AddRequestHeader("X-Added", "")
		x.SetRequestHeader("Accept", "text/plain")
	}
	for _, e := range exchangetest.Engines(t, viewHandler(edit)) {
		t.Run(e.Name, func(t *testing.T) {
			v := decodeView(t, rawRequest(t, e, oddFields, ""))
			wantValues(t, v, "x-custom", "new")
			wantValues(t, v, "x-odd")
			wantValues(t, v, "x-added", "1", "")
			wantValues(t, v, "accept", "text/plain")
			wantValues(t, v, "user-agent", "")
			wantValues(t, v, "cookie", `a=1; c="q\"x"; d=v\w`)
			wantFirst(t, v, "X-Added", "1")
			wantFirst(t, v, "User-Agent", "")
			if v.Present["X-Odd"] {
				t.Errorf("X-Odd still present")
			}
		})
	}
}

// TestFastRequestHeadersEditedBefore: a field deleted or set on
// fasthttp's header before the exchange saw the request (the listener
// strips and sets the client certificate's header) does not come back
// from the raw bytes; obsolete line folding is joined with a space.
func TestFastRequestHeadersEditedBefore(t *testing.T) {
	inner := exchange.Fast(viewHandler(nil), exchangetest.RenderError, false)
	for _, tc := range []struct {
		name   string
		before func(h *fasthttp.RequestHeader)
		extra  string
		check  func(t *testing.T, v headerView)
	}{
		{"strip and set", func(h *fasthttp.RequestHeader) {
			h.Del("X-Client-Cert")
			h.Set("X-Client-Cert", "CN=real")
		}, "X-Client-Cert: CN=spoofed\r\n", func(t *testing.T, v headerView) {
			wantValues(t, v, "x-client-cert", "CN=real")
		}},
		{"strip", func(h *fasthttp.RequestHeader) { h.Del("X-Client-Cert") },
			"X-Client-Cert: CN=spoofed\r\n", func(t *testing.T, v headerView) {
				wantValues(t, v, "x-client-cert")
			}},
		{"set", func(h *fasthttp.RequestHeader) { h.Set("X-Client-Cert", "CN=real") },
			"", func(t *testing.T, v headerView) {
				wantValues(t, v, "x-client-cert", "CN=real")
			}},
		{"folded", nil, "X-Fold: a\r\n  b\r\n\tc\r\n", func(t *testing.T, v headerView) {
			wantValues(t, v, "x-fold", "a b c")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
				if tc.before != nil {
					tc.before(&ctx.Request.Header)
				}
				inner(ctx)
			}}
			go srv.Serve(ln)
			defer srv.Shutdown()
			e := exchangetest.Engine{Name: "fast", URL: "http://" + ln.Addr().String(), Proto: "HTTP/1.1"}
			v := decodeView(t, rawRequest(t, e, oddFields, tc.extra))
			tc.check(t, v)
			wantValues(t, v, "cookie", `a=1; c="q\"x"; d=v\w`)
			wantValues(t, v, "user-agent", "")
			wantValues(t, v, "x-custom", "one", "two")
		})
	}
}

// BenchmarkExchange_RequestHeaders reads a parsed request's header the
// way the proxy does: a few lookups and one visit.
func BenchmarkExchange_RequestHeaders(b *testing.B) {
	const head = "GET /bench?x=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: bench\r\n" +
		"Accept: */*\r\nCookie: a=1; b=2\r\nX-Request-Id: 42\r\n\r\n"
	var req fasthttp.Request
	if err := req.Header.Read(bufio.NewReader(strings.NewReader(head))); err != nil {
		b.Fatal(err)
	}
	ctx := new(fasthttp.RequestCtx)
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 4242}, nil)
	if len(ctx.Request.Header.RawHeaders()) == 0 {
		b.Fatal("no raw header")
	}
	n := 0
	visit := func(k, v []byte) { n += len(k) + len(v) }
	h := exchange.Fast(exchange.HandlerFunc(func(x exchange.Exchange) error {
		_ = x.RequestHeader("Connection")
		_ = x.RequestHeader("X-Forwarded-For")
		_ = x.RequestHeader("Forwarded")
		x.VisitRequestHeaders(visit)
		return nil
	}), exchangetest.RenderError, false)
	h(ctx)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h(ctx)
	}
	if n == 0 {
		b.Fatal("no header visited")
	}
}
