package h2_test

import (
	"testing"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/h2"
	"golang.org/x/net/http2"
)

// smuggling are the header blocks of issue 21, finding 1, and the other
// requests RFC 9113 (8.2, 8.3) calls malformed: each would reach an
// HTTP/1.1 upstream as another request (or none) if it reached a
// handler.
var smuggling = []struct {
	name string
	kv   []string
}{
	{"method with a request line", req(":method", "GET /papi/secret.txt HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Junk:", ":path", "/api/x")},
	{"path with a second request", req(":path", "/api/a?q HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nPOST /api/capture HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 200\r\nX-Rest: ")},
	{"NUL in the query", req(":path", "/api/a?q=\x00x")},
	{"LF in the path", req(":path", "/a\nb")},
	{"method with a space", req(":method", "GET /x")},
	{"method not a token", req(":method", "G(E)T")},
	{"empty method", req(":method", "")},
	{"space in the path", req(":path", "/a b")},
	{"tab in the path", req(":path", "/a\tb")},
	{"DEL in the path", req(":path", "/a\x7fb")},
	{"empty path", req(":path", "")},
	{"path not origin-form", req(":path", "a/b")},
	{"absolute-form path", req(":path", "http://b.test/x")},
	{"star for GET", req(":path", "*")},
	{"bad escape in the path", req(":path", "/a%zz")},
	{"CR in the authority", req(":authority", "a.test\r\nX: y")},
	{"space in the authority", req(":authority", "a.test x")},
	{"userinfo in the authority", req(":authority", "u@a.test")},
	{"scheme not http", req(":scheme", "ftp")},
	{"no scheme", without(":scheme")},
	{"no path", without(":path")},
	{"no method", without(":method")},
	{"CR in a value", req("x-a", "1\r\nx-b: 2")},
	{"NUL in a value", req("x-a", "1\x00")},
	{"upper-case name", req("X-A", "1")},
	{"name not a token", req("x a", "1")},
	{"connection", req("connection", "close")},
	{"keep-alive", req("keep-alive", "5")},
	{"proxy-connection", req("proxy-connection", "keep-alive")},
	{"transfer-encoding", req("transfer-encoding", "chunked")},
	{"upgrade", req("upgrade", "websocket")},
	{"te not trailers", req("te", "gzip")},
	{"te twice", req("te", "trailers", "te", "trailers")},
	{"host not the authority", req("host", "b.test")},
	{"two hosts", append(without(":authority"), "host", "a.test", "host", "a.test")},
	{"CR in the host", append(without(":authority"), "host", "a.test\r\nx: y")},
	{"pseudo after regular", append(req("x-a", "1"), ":foo", "x")},
	{"unknown pseudo", append(base(), ":foo", "x")},
	{"duplicate path", append(base(), ":path", "/b")},
}

func base() []string {
	return []string{":method", "GET", ":scheme", "http", ":authority", "a.test", ":path", "/"}
}

// req is a GET with each pseudo-header named in kv replaced, and the
// other fields of kv added.
func req(kv ...string) []string {
	out := base()
	for i := 0; i+1 < len(kv); i += 2 {
		found := false
		for j := 0; j < len(out); j += 2 {
			if out[j] == kv[i] && kv[i][0] == ':' {
				out[j+1], found = kv[i+1], true
			}
		}
		if !found {
			out = append(out, kv[i], kv[i+1])
		}
	}
	return out
}

func without(name string) []string {
	var out []string
	b := base()
	for i := 0; i < len(b); i += 2 {
		if b[i] != name {
			out = append(out, b[i], b[i+1])
		}
	}
	return out
}

// TestMalformedRequestReset: a request with a malformed pseudo-header or
// field gets RST_STREAM PROTOCOL_ERROR and never reaches the handler, as
// on x/net/http2 (issue 21, finding 1); the connection goes on, and a
// valid request on it is served.
func TestMalformedRequestReset(t *testing.T) {
	ran := make(chan string, 64)
	h := exchange.HandlerFunc(func(x exchange.Exchange) error {
		ran <- string(x.Method()) + " " + string(x.RequestURI())
		x.SetBody([]byte("ok"))
		return nil
	})
	_, addr := start(t, h2.Options{Handler: h})
	cl := dial(t, addr)
	id := uint32(1)
	for _, tc := range smuggling {
		cl.headers(id, true, tc.kv...)
		if code := cl.reset(id); code != http2.ErrCodeProtocol {
			t.Errorf("%s: RST_STREAM %v, want PROTOCOL_ERROR", tc.name, code)
		}
		select {
		case got := <-ran:
			t.Errorf("%s: the handler ran: %q", tc.name, got)
		default:
		}
		id += 2
	}
	for _, kv := range [][]string{
		base(),
		req(":method", "OPTIONS", ":path", "*"),
		req(":path", "/a%20b?q=%zz&r= "[:15]),
		req("te", "trailers"),
		req("host", "a.test"),
		append(without(":authority"), "host", "a.test"),
		req(":scheme", "https"),
		{":method", "CONNECT", ":authority", "a.test:443"},
	} {
		cl.headers(id, true, kv...)
		if s := status(cl, id); s != "200" {
			t.Errorf("%q: status %s, want 200", kv, s)
		}
		<-ran
		id += 2
	}
}
