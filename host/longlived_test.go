package host

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

// longLivedBackend serves a WebSocket echo on /ws and a server-sent-events
// stream on /events that sends one event each time next is signalled.
func longLivedBackend(t *testing.T, next <-chan struct{}) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle("/ws", websocket.Handler(func(c *websocket.Conn) { io.Copy(c, c) }))
	mux.HandleFunc("/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for i := 0; ; i++ {
			fmt.Fprintf(w, "data: %d\n\n", i)
			fl.Flush()
			select {
			case <-next:
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Second):
				return
			}
		}
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

const longLivedConfig = `
server {
  shutdown_timeout = "30s"
}
site "*" {
  listen = ["127.0.0.1:PORT"]
  route "/" {
    proxy {
      upstreams = ["BACKEND"]
    }
  }
  route "/version" {
    respond { body = "VERSION" }
  }
}
`

// TestLongLivedSurviveReload: a WebSocket and an SSE stream opened before
// a reload keep working after it (they stay on the old generation, which
// drains), while new requests see the new config.
func TestLongLivedSurviveReload(t *testing.T) {
	next := make(chan struct{})
	backend := longLivedBackend(t, next)
	src := strings.ReplaceAll(longLivedConfig, "BACKEND", backend.URL)
	inst, base, path := startConfig(t, strings.ReplaceAll(src, "VERSION", "v1"))
	port := strings.TrimPrefix(base, "http://127.0.0.1:")

	ws, err := websocket.Dial(strings.Replace(base, "http", "ws", 1)+"/ws", "", base)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.SetDeadline(time.Now().Add(10 * time.Second))
	echo := func(msg string) {
		t.Helper()
		if _, err := ws.Write([]byte(msg)); err != nil {
			t.Fatalf("websocket write %q: %v", msg, err)
		}
		buf := make([]byte, len(msg))
		if _, err := io.ReadFull(ws, buf); err != nil || string(buf) != msg {
			t.Fatalf("websocket echo %q: %q %v", msg, buf, err)
		}
	}
	echo("before")

	resp, err := http.Get(base + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewReader(resp.Body)
	event := func(want string) {
		t.Helper()
		for {
			line, err := events.ReadString('\n')
			if err != nil {
				t.Fatalf("event stream ended waiting for %q: %v", want, err)
			}
			if strings.HasPrefix(line, "data: ") {
				if got := strings.TrimSpace(line[6:]); got != want {
					t.Fatalf("event %q, want %q", got, want)
				}
				return
			}
		}
	}
	event("0")

	for i := 2; i <= 4; i++ {
		newSrc := strings.ReplaceAll(strings.ReplaceAll(src, "VERSION", fmt.Sprintf("v%d", i)), "PORT", port)
		if err := os.WriteFile(path, []byte(newSrc), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := inst.Reload(); err != nil {
			t.Fatal(err)
		}
		if _, body := get(t, base+"/version", ""); body != fmt.Sprintf("v%d", i) {
			t.Fatalf("after reload %d: %q", i, body)
		}
		time.Sleep(150 * time.Millisecond) // let the old generation drain and close
		echo(fmt.Sprintf("after reload %d", i))
		next <- struct{}{}
		event(fmt.Sprint(i - 1))
	}
}
