package listen

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
)

// TestOpenServeShutdown: a listener serves the handler Deps.Handler
// returns, renders its errors, and refuses connections after Shutdown,
// with nothing above it but those values.
func TestOpenServeShutdown(t *testing.T) {
	var gotAltSvc []string
	l, err := Open(Options{Address: "127.0.0.1:0", MaxHeaderBytes: 16 << 10}, Deps{
		Log: slog.New(slog.DiscardHandler),
		Handler: func(altSvc string) exchange.Handler {
			gotAltSvc = append(gotAltSvc, altSvc)
			return exchange.HandlerFunc(func(x exchange.Exchange) error {
				if string(x.Path()) == "/fail" {
					return exchange.Errorf(http.StatusTeapot, "no coffee")
				}
				x.SetBody([]byte("hello " + string(x.Path())))
				return nil
			})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	l.Serve()
	if len(gotAltSvc) != 1 || gotAltSvc[0] != "" {
		t.Errorf("Deps.Handler called with %q, want once with \"\" (no HTTP/3)", gotAltSvc)
	}
	base := "http://" + l.Addr().String()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for _, tc := range []struct {
		path, body, nosniff string
		status              int
	}{
		{"/a", "hello /a", "", http.StatusOK},
		{"/fail", "no coffee", "nosniff", http.StatusTeapot},
	} {
		resp, err := c.Get(base + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || strings.TrimSpace(string(b)) != tc.body ||
			resp.Header.Get("X-Content-Type-Options") != tc.nosniff {
			t.Errorf("GET %s: %d %q (X-Content-Type-Options %q), want %d %q (%q)", tc.path, resp.StatusCode, b,
				resp.Header.Get("X-Content-Type-Options"), tc.status, tc.body, tc.nosniff)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if conn, err := net.DialTimeout("tcp", l.Addr().String(), time.Second); err == nil {
		conn.Close()
		t.Error("the socket still accepts after Shutdown")
	}
}

// TestFields: the header lines fasthttp's parser lets through and the
// shim refuses.
func TestFields(t *testing.T) {
	for _, c := range []struct {
		raw     string
		chunked bool
		want    error
	}{
		{"Host: a\r\nX-Y: z\r\n", false, nil},
		{"Host: a\r\nX y: z\r\n", false, errFieldName},
		{"Host: a\r\n y: folded\r\n", false, nil}, // obs-fold: a continuation, not a name
		{"Host: a\r\nTransfer-Encoding: identity\r\n", false, errTransferCoding},
		{"Host: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n", true, errConflictingFraming},
		{"Host: a\r\nTransfer-Encoding: chunked\r\n", true, nil},
		{"Host: a\r\nContent-Length: 3\r\n", false, nil},
	} {
		if got := fields([]byte(c.raw), c.chunked); got != c.want {
			t.Errorf("fields(%q, chunked %v) = %v, want %v", c.raw, c.chunked, got, c.want)
		}
	}
}

// TestSniff: the accept loop tells the HTTP/2 preface from HTTP/1.1 and
// hands on every byte it read.
func TestSniff(t *testing.T) {
	for _, c := range []struct {
		sent string
		h2   bool
	}{
		{h2Preface + "\x00\x00\x00\x04", true},
		{"GET / HTTP/1.1\r\nHost: a\r\n\r\n", false},
		{"PRI * HTTP/1.1\r\n\r\n", false},
	} {
		client, server := net.Pipe()
		go func() {
			_, _ = io.WriteString(client, c.sent)
			client.Close()
		}()
		p := &peekedConn{Conn: server}
		h2, err := p.sniff(h2Preface)
		if h2 != c.h2 || (err != nil && c.h2) {
			t.Errorf("sniff(%q) = %v, %v; want %v", c.sent, h2, err, c.h2)
		}
		all, _ := io.ReadAll(p)
		if string(all) != c.sent {
			t.Errorf("after sniff(%q) the engine reads %q", c.sent, all)
		}
		server.Close()
	}
}
