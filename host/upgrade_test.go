package host

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

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
			inst, base, _ := startConfig(t, src)
			ws, err := websocket.Dial(strings.Replace(base, "http", "ws", 1)+"/ws", "", base)
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
			go func() { done <- inst.Shutdown(ctx) }()
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
