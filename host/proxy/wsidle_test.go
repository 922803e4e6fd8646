package proxy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/proxy"
	"golang.org/x/net/websocket"
)

// TestWebSocketIdleTimeout: a tunnel with no byte either way for
// tunnel_idle_timeout is closed, both ends (issue 21, finding 10: idle
// WebSocket tunnels had no timeout); one that keeps talking, though for
// longer than the timeout in all, is not. Over HTTP/1.1 (fasthttp and
// net/http) and HTTP/2's extended CONNECT (host/h2).
func TestWebSocketIdleTimeout(t *testing.T) {
	const idle = 300 * time.Millisecond
	upClosed := make(chan struct{}, 8)
	be := backend(t, websocket.Handler(func(c *websocket.Conn) {
		var msg string
		for websocket.Message.Receive(c, &msg) == nil && websocket.Message.Send(c, msg) == nil {
		}
		upClosed <- struct{}{}
	}).ServeHTTP)
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: be.URL}}, TunnelIdleTimeout: idle})
	for _, e := range exchangetest.Engines(t, p) {
		if e.Name == "std-h2c" || e.Name == "h3" {
			continue // no extended CONNECT on net/http's HTTP/2; no WebSocket client over HTTP/3
		}
		t.Run(e.Name, func(t *testing.T) {
			talk, wait := wsClient(t, e)
			for range 6 { // 6 × idle/3: longer than idle in all, never idle
				if got := talk("ping"); got != "ping" {
					t.Fatalf("echo %q", got)
				}
				time.Sleep(idle / 3)
			}
			start := time.Now()
			wait() // returns once the tunnel is closed
			if d := time.Since(start); d < idle/2 || d > idle+2*time.Second {
				t.Fatalf("idle tunnel closed after %v; tunnel_idle_timeout is %v", d, idle)
			}
			select {
			case <-upClosed:
			case <-time.After(2 * time.Second):
				t.Fatal("the upstream connection outlived the idle tunnel")
			}
		})
	}
}

// wsClient opens a WebSocket to e's "/ws": talk sends a message and
// returns the echo; wait blocks until the tunnel ends (5 s at most).
func wsClient(t *testing.T, e exchangetest.Engine) (talk func(string) string, wait func()) {
	t.Helper()
	if e.Name == "h2" {
		w := dialH2WS(t, e)
		if s := w.open("/ws"); s != "200" {
			t.Fatalf("status %s, want 200", s)
		}
		return func(m string) string { w.send(m); return w.receive() },
			func() {
				w.c.SetDeadline(time.Now().Add(5 * time.Second))
				for !w.data() {
				}
			}
	}
	ws, err := websocket.Dial("ws"+strings.TrimPrefix(e.URL, "http")+"/ws", "", "http://example.com/")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return func(m string) string {
			ws.SetDeadline(time.Now().Add(5 * time.Second))
			var got string
			if websocket.Message.Send(ws, m) != nil || websocket.Message.Receive(ws, &got) != nil {
				t.Fatal("tunnel closed while talking")
			}
			return got
		}, func() {
			ws.SetDeadline(time.Now().Add(5 * time.Second))
			var got string
			if err := websocket.Message.Receive(ws, &got); err == nil {
				t.Fatalf("got %q on an idle tunnel", got)
			}
		}
}
