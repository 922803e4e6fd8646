package host

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

const longLivedH2Config = `
server {
  shutdown_timeout = "30s"
}
listener "127.0.0.1:PORT" {
  h2c          = true
  http2_engine = "sluice"
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

// TestLongLivedSurviveReloadH2: over sluice's own HTTP/2 engine, an SSE
// stream opened before a reload keeps working after it, on the same
// connection as the requests that see each new config.
func TestLongLivedSurviveReloadH2(t *testing.T) {
	next := make(chan struct{})
	backend := longLivedBackend(t, next)
	src := strings.ReplaceAll(longLivedH2Config, "BACKEND", backend.URL)
	srv := startConfig(t, strings.ReplaceAll(src, "VERSION", "v1"))
	port := strings.TrimPrefix(srv.URL, "http://127.0.0.1:")

	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &p, MaxConnsPerHost: 1}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	get := func(path string) string {
		t.Helper()
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.Proto != "HTTP/2.0" {
			t.Fatalf("%s over %s", path, resp.Proto)
		}
		return string(b)
	}
	resp, err := client.Get(srv.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.Proto != "HTTP/2.0" {
		t.Fatalf("events over %s", resp.Proto)
	}
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
		if err := os.WriteFile(srv.Config, []byte(newSrc), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := srv.Inst.Reload(); err != nil {
			t.Fatal(err)
		}
		if body := get("/version"); body != fmt.Sprintf("v%d", i) {
			t.Fatalf("after reload %d: %q", i, body)
		}
		time.Sleep(150 * time.Millisecond) // let the old generation drain and close
		next <- struct{}{}
		event(fmt.Sprint(i - 1))
	}
}
