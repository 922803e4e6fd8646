package host

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "plain") })
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

// openWebSocket dials the backend's echo through base and returns a
// function that checks one message comes back; the socket closes when the
// test ends.
func openWebSocket(t *testing.T, base string) (echo func(msg string)) {
	t.Helper()
	ws, err := websocket.Dial(strings.Replace(base, "http", "ws", 1)+"/ws", "", base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	ws.SetDeadline(time.Now().Add(15 * time.Second))
	return func(msg string) {
		t.Helper()
		if _, err := ws.Write([]byte(msg)); err != nil {
			t.Fatalf("websocket write %q: %v", msg, err)
		}
		buf := make([]byte, len(msg))
		if _, err := io.ReadFull(ws, buf); err != nil || string(buf) != msg {
			t.Fatalf("websocket echo %q: %q %v", msg, buf, err)
		}
	}
}

// openEvents opens the backend's event stream through base and returns
// its response header and a function that checks the next event's data.
func openEvents(t *testing.T, base string) (http.Header, func(want string)) {
	t.Helper()
	resp, err := http.Get(base + "/events")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	events := bufio.NewReader(resp.Body)
	return resp.Header, func(want string) {
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
	srv := startConfig(t, strings.ReplaceAll(src, "VERSION", "v1"))
	port := strings.TrimPrefix(srv.URL, "http://127.0.0.1:")

	echo := openWebSocket(t, srv.URL)
	echo("before")
	_, event := openEvents(t, srv.URL)
	event("0")

	for i := 2; i <= 4; i++ {
		newSrc := strings.ReplaceAll(strings.ReplaceAll(src, "VERSION", fmt.Sprintf("v%d", i)), "PORT", port)
		if err := os.WriteFile(srv.Config, []byte(newSrc), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := srv.Inst.Reload(); err != nil {
			t.Fatal(err)
		}
		if _, body := get(t, srv.URL+"/version", ""); body != fmt.Sprintf("v%d", i) {
			t.Fatalf("after reload %d: %q", i, body)
		}
		time.Sleep(150 * time.Millisecond) // let the old generation drain and close
		echo(fmt.Sprintf("after reload %d", i))
		next <- struct{}{}
		event(fmt.Sprint(i - 1))
	}
}

const swapConfig = `
filter "v" {
  module = "MODULE"
}
site "*" {
  listen = ["127.0.0.1:PORT"]
  route "/" {
    filters = ["v"]
    proxy {
      upstreams = ["BACKEND"]
    }
  }
}
`

// TestLongLivedSurviveModuleSwap: a WebSocket and an SSE stream opened
// through a filtered route keep working across hot swaps of the filter's
// module, while new requests run the new module.
func TestLongLivedSurviveModuleSwap(t *testing.T) {
	next := make(chan struct{})
	backend := longLivedBackend(t, next)
	wasm, err := os.ReadFile("../runtime/testdata/version.wasm")
	if err != nil {
		t.Fatal(err)
	}
	module := filepath.Join(t.TempDir(), "version.wasm")
	writeVersion := func(v string) {
		t.Helper()
		b := bytes.Replace(wasm, []byte("v000"), []byte(v), 1)
		tmp := module + ".new"
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, module); err != nil {
			t.Fatal(err)
		}
	}
	writeVersion("v000")
	src := strings.NewReplacer("BACKEND", backend.URL, "MODULE", module).Replace(swapConfig)
	base := startConfig(t, src).URL
	version := func() string {
		resp, err := http.Get(base + "/plain")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.Header.Get("X-Version")
	}
	if v := version(); v != "v000" {
		t.Fatalf("x-version %q before any swap", v)
	}

	echo := openWebSocket(t, base)
	echo("before")
	header, event := openEvents(t, base)
	if v := header.Get("X-Version"); v != "v000" {
		t.Fatalf("event stream x-version %q", v)
	}
	event("0")

	for i := 1; i <= 3; i++ {
		want := fmt.Sprintf("v%03d", i)
		writeVersion(want)
		deadline := time.Now().Add(5 * time.Second)
		for version() != want {
			if time.Now().After(deadline) {
				t.Fatalf("module %s never swapped in", want)
			}
			time.Sleep(20 * time.Millisecond)
		}
		echo(fmt.Sprintf("after swap %d", i))
		next <- struct{}{}
		event(fmt.Sprint(i))
	}
}
