package host

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/generation"
	"github.com/sluicehq/sluice/host/handover"
	"golang.org/x/net/websocket"
)

// TestShutdownWaitsForWebSocket: a drain (SIGTERM, or the old process of
// an upgrade) lets an upgraded connection run until it closes, or until
// the drain's deadline; the engines stopped tracking it at the upgrade.
func TestShutdownWaitsForWebSocket(t *testing.T) {
	for _, c := range []struct {
		name     string
		maxConns string
		deadline time.Duration
		closeWS  bool
	}{
		{"closes first", "", 20 * time.Second, true},
		{"closes first, no max_conns", "max_conns = 0", 20 * time.Second, true},
		{"deadline first", "", 400 * time.Millisecond, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			backend := longLivedBackend(t, make(chan struct{}))
			src := strings.ReplaceAll(longLivedConfig, "BACKEND", backend.URL)
			if c.maxConns != "" {
				src = "listener \"127.0.0.1:PORT\" {\n  " + c.maxConns + "\n}\n" + src
			}
			srv := startConfig(t, src)
			ws, err := websocket.Dial(strings.Replace(srv.URL, "http", "ws", 1)+"/ws", "", srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			echo := func(msg string) error {
				_ = ws.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := ws.Write([]byte(msg)); err != nil {
					return err
				}
				buf := make([]byte, len(msg))
				_, err := io.ReadFull(ws, buf)
				return err
			}
			if err := echo("before"); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), c.deadline)
			defer cancel()
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- srv.Inst.Shutdown(ctx) }()
			if !c.closeWS {
				select {
				case err := <-done:
					if err == nil || !strings.Contains(err.Error(), "connections still open") {
						t.Errorf("Shutdown at its deadline = %v; want the open connection named", err)
					}
					if d := time.Since(start); d < c.deadline/2 {
						t.Errorf("Shutdown returned after %v, before its deadline %v", d, c.deadline)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("Shutdown did not stop at its deadline")
				}
				return
			}
			time.Sleep(300 * time.Millisecond)
			select {
			case err := <-done:
				t.Fatalf("Shutdown returned (%v) with a WebSocket open", err)
			default:
			}
			if err := echo("while draining"); err != nil {
				t.Fatalf("websocket while draining: %v", err)
			}
			ws.Close()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Shutdown = %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Shutdown did not return once the WebSocket closed")
			}
		})
	}
}

// TestHandoverSockets hands a TLS listener with HTTP/3 (its TCP and UDP
// sockets) to a second server, as an upgrade hands them to the new
// process, and stops the first: HTTP/1.1, HTTP/2 and HTTP/3 are then
// answered by the second on the same port, which it never bound.
func TestHandoverSockets(t *testing.T) {
	e, old, addr := h3Env(t)
	files, err := old.handoverFiles()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range files {
		names[f.Name] = true
	}
	if len(files) != 2 || !names[handover.Name("tcp", addr)] || !names[handover.Name("udp", addr)] {
		t.Fatalf("hand-over files %v, want the TCP and UDP sockets of %s", names, addr)
	}
	socks, err := handover.FromFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	next := NewServer(tlsTestDeps().Log)
	next.inherit = socks
	g, err := generation.Build(old.Current().Config, tlsTestDeps())
	if err != nil {
		t.Fatal(err)
	}
	if err := next.Apply(g); err != nil {
		t.Fatalf("the new server could not take the sockets (did it bind?): %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = next.Shutdown(ctx)
	})
	if left := socks.CloseUnused(); len(left) != 0 {
		t.Errorf("sockets not taken: %v", left)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := old.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	base := "https://a.test:" + tlsPortOf(addr)
	for name, c := range map[string]*http.Client{"h1": e.client(t, "h1", nil), "h2": e.client(t, "h2", nil), "h3": h3Client(t, e)} {
		resp, body := tlsGet(t, c, base+"/respond")
		if resp.StatusCode != 201 || body != "responded" {
			t.Errorf("%s after the hand-over: %d %q", name, resp.StatusCode, body)
		}
	}
}

// TestInheritedConnectionsMeetAGeneration: a connection already waiting
// on an inherited socket (a client of a socket-activated service, or one
// that arrived during an upgrade) is answered by the config, not by a
// server that has no generation yet (503).
func TestInheritedConnectionsMeetAGeneration(t *testing.T) {
	for i := range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		f, err := handover.Dup(ln.(*net.TCPListener), handover.Name("tcp", addr))
		ln.Close()
		if err != nil {
			t.Fatal(err)
		}
		socks, err := handover.FromFiles([]handover.File{f})
		if err != nil {
			t.Fatal(err)
		}
		cfg, diags := config.Parse("sluice.hcl", []byte(fmt.Sprintf(`
site "*" {
  listen = [%q]
  route "/" {
    respond {
      body = "configured"
    }
  }
}
`, addr)))
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		srv := NewServer(tlsTestDeps().Log)
		srv.inherit = socks
		g, err := generation.Build(cfg, tlsTestDeps())
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Apply(g); err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_ = srv.Shutdown(ctx)
		cancel()
		if resp.StatusCode != 200 || string(body) != "configured" {
			t.Fatalf("try %d: the waiting connection got %d %q", i, resp.StatusCode, body)
		}
	}
}
