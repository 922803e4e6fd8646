package listen

import (
	"bufio"
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

// TestMalformedRequestLine: a request line that is not HTTP/1.x's
// (RFC 9112, section 3) is answered 400 with Connection: close, and the
// connection then ends in an orderly close, not a reset, as nginx does:
// on a plain fasthttp listener, on fasthttp behind an h2c listener's
// sorting, and on net/http for comparison. Only a first line with no
// HTTP version in it at all is, on an h2c listener, a failed HTTP/2
// preface (RFC 9113, section 3.4; h2spec 3.5/2), closed unanswered.
func TestMalformedRequestLine(t *testing.T) {
	const ok, closed = http.StatusOK, 0
	engines := requestLineEngines(t)
	for _, c := range []struct {
		name, req string
		halfClose bool // the client shuts its sending side after req
		// want is the status on fasthttp (plain), h2c the one on an h2c
		// listener and std net/http's, where they differ (-1: as want).
		want, h2c, std int
	}{
		{"well formed", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", false, ok, -1, -1},
		{"two-digit minor version", "GET / HTTP/1.10\r\nHost: a\r\n\r\n", false, 400, -1, -1},
		{"lower-case protocol", "GET / http/1.1\r\nHost: a\r\n\r\n", false, 400, -1, -1},
		{"trailing space", "GET / HTTP/1.1 \r\nHost: a\r\n\r\n", false, 400, -1, -1},
		{"two spaces", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", false, 400, -1, -1},
		{"no version", "GET /\r\nHost: a\r\n\r\n", false, 400, -1, -1},
		{"version junk", "GET / HTTP/x.y\r\nHost: a\r\n\r\n", false, 400, -1, -1},
		// A head of bare LFs is a 400 on fasthttp (which frames a head by
		// CRLF CRLF) once the client stops sending; net/http reads a bare
		// LF as a line end, as RFC 9112, section 2.2, allows.
		{"bare LF", "GET / HTTP/1.1\nHost: a\n\n", true, 400, -1, ok},
		// While the client waits, fasthttp waits for the CRLF CRLF too,
		// up to read_header_timeout: then a 408, still no reset.
		{"bare LF, client waiting", "GET / HTTP/1.1\nHost: a\n\n", false, 408, -1, ok},
		{"failed h2 preface", "INVALID CONNECTION PREFACE\r\n\r\n", false, 400, closed, -1},
	} {
		for _, e := range engines {
			t.Run(c.name+"/"+e.name, func(t *testing.T) {
				want := c.want
				if e.name == "fasthttp-h2c" && c.h2c >= 0 {
					want = c.h2c
				}
				if e.name == "net/http" && c.std >= 0 {
					want = c.std
				}
				status, connClose, err := rawRequest(e.addr, c.req, c.halfClose)
				switch {
				case want == closed:
					if status != 0 {
						t.Errorf("answered %d, want the connection closed unanswered", status)
					}
				case err != nil:
					t.Errorf("%q: %v, want %d", c.req, err, want)
				case status != want:
					t.Errorf("%q: %d, want %d", c.req, status, want)
				case status >= 400 && !connClose:
					t.Errorf("%q: %d without Connection: close", c.req, status)
				}
			})
		}
	}
}

type requestLineEngine struct{ name, addr string }

// headerTimeout is the engines' read_header_timeout: short, since one
// case waits it out.
const headerTimeout = 300 * time.Millisecond

// requestLineEngines starts fasthttp on a plain listener, fasthttp
// behind an h2c listener's sorting, and net/http serving HTTP/1.1, each
// answering 200 to every request it parses.
func requestLineEngines(t *testing.T) []requestLineEngine {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	h := exchange.HandlerFunc(func(x exchange.Exchange) error {
		x.SetBody([]byte("ok"))
		return nil
	})
	var engines []requestLineEngine
	for _, h2c := range []bool{false, true} {
		l, err := Open(Options{Address: "127.0.0.1:0", MaxHeaderBytes: 16 << 10, H2C: h2c, ReadHeaderTimeout: headerTimeout},
			Deps{Log: log, Handler: func(string) exchange.Handler { return h }})
		if err != nil {
			t.Fatal(err)
		}
		l.Serve()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = l.Shutdown(ctx)
		})
		name := "fasthttp"
		if h2c {
			name = "fasthttp-h2c"
		}
		engines = append(engines, requestLineEngine{name, l.Addr().String()})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &Listener{opts: Options{ReadHeaderTimeout: headerTimeout, MaxHeaderBytes: 16 << 10}, log: log}
	std := l.newStd(exchange.Std(h, l.renderError))
	var p http.Protocols
	p.SetHTTP1(true)
	std.Protocols = &p
	go func() { _ = std.Serve(ln) }()
	t.Cleanup(func() { _ = std.Close() })
	return append(engines, requestLineEngine{"net/http", ln.Addr().String()})
}

// rawRequest sends req over a new TCP connection and reads the answer
// to the end of the connection: the status (0 if none came), whether it
// said Connection: close, and any error other than a clean end (a reset
// among them).
func rawRequest(addr, req string, halfClose bool) (int, bool, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return 0, false, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		return 0, false, err
	}
	if halfClose {
		_ = c.(*net.TCPConn).CloseWrite()
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, false, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && resp.Close {
		// The server said it closes: the next read is its FIN, not a reset.
		_, err = c.Read(make([]byte, 1))
		if err == io.EOF {
			err = nil
		} else if err == nil {
			err = io.ErrUnexpectedEOF
		}
	}
	return resp.StatusCode, resp.Close || strings.EqualFold(resp.Header.Get("Connection"), "close"), err
}
