package listen

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
)

// TestShutdownKeepAlive: while a listener drains, a keep-alive HTTP/1.1
// client in the middle of a sequence of requests gets its next response,
// with Connection: close, and then an orderly end of stream, never a
// reset or a request left unanswered; an idle keep-alive connection is
// closed after the grace, also without a reset. On every way HTTP/1.1
// reaches fasthttp: the bare socket, and through the accept loop that
// sorts h2c from HTTP/1.1.
func TestShutdownKeepAlive(t *testing.T) {
	for _, c := range []struct {
		name string
		h2c  bool
	}{{"plain", false}, {"h2c", true}} {
		t.Run(c.name, func(t *testing.T) {
			l, err := Open(Options{Address: "127.0.0.1:0", MaxHeaderBytes: 16 << 10, H2C: c.h2c}, Deps{
				Log: slog.New(slog.DiscardHandler),
				Handler: func(string) exchange.Handler {
					return exchange.HandlerFunc(func(x exchange.Exchange) error {
						x.SetBody([]byte("ok"))
						return nil
					})
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			l.grace = 500 * time.Millisecond
			l.Serve()
			dial := func() (net.Conn, *bufio.Reader) {
				conn, err := net.DialTimeout("tcp", l.Addr().String(), time.Second)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { conn.Close() })
				_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
				return conn, bufio.NewReader(conn)
			}
			get := func(conn net.Conn, br *bufio.Reader) *http.Response {
				t.Helper()
				if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
					t.Fatalf("write: %v", err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("read response: %v", err)
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(b) != "ok" || resp.StatusCode != http.StatusOK {
					t.Fatalf("response: %d %q %v", resp.StatusCode, b, err)
				}
				return resp
			}
			eof := func(what string, br *bufio.Reader) {
				t.Helper()
				if n, err := br.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
					t.Errorf("%s: after the last response: %d bytes, %v; want EOF", what, n, err)
				}
			}
			active, activeR := dial()
			idle, idleR := dial()
			if resp := get(active, activeR); resp.Close {
				t.Fatal("Connection: close before the drain")
			}
			get(idle, idleR)

			type end struct {
				after time.Duration
				n     int
				err   error
			}
			idleEnd := make(chan end, 1)
			shut := make(chan error, 1)
			start := time.Now()
			go func() {
				n, err := idleR.Read(make([]byte, 1))
				idleEnd <- end{time.Since(start), n, err}
			}()
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				shut <- l.Shutdown(ctx)
			}()
			for !l.draining.Load() && time.Since(start) < 5*time.Second {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond) // the drain under way, within the grace
			if resp := get(active, activeR); !resp.Close {
				t.Error("the response during the drain has no Connection: close")
			}
			eof("active", activeR)
			active.Close() // as a client does after Connection: close; the server's close lingers until then
			e := <-idleEnd
			idle.Close()
			if e.n != 0 || !errors.Is(e.err, io.EOF) {
				t.Errorf("idle: %d bytes, %v; want EOF", e.n, e.err)
			}
			if e.after < l.grace/2 {
				t.Errorf("idle connection closed after %v, within the grace (%v)", e.after, l.grace)
			}
			if err := <-shut; err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		})
	}
}
