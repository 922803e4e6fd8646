package host

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// TestSharedStoreRateLimit: two instances (two servers in one process,
// as the store does not care) with one store count one limit between
// them; without it each has its own.
func TestSharedStoreRateLimit(t *testing.T) {
	m := miniredis.RunT(t)
	site := `
site "a.test" {
  listen = ["127.0.0.1:PORT"]
  route "/" {
    respond { body = "ok" }
    rate_limit {
      rate  = "1/m"
      burst = 3
    }
  }
}
`
	withStore := fmt.Sprintf("store \"redis\" {\n  address = %q\n  prefix = %q\n}\n", m.Addr(), t.Name()+":") + site
	tests := []struct {
		name     string
		src      string
		admitted int // of 8 requests, 4 to each instance
	}{
		{"shared", withStore, 3},
		{"local", site, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := startConfig(t, tt.src).URL
			b := startConfig(t, tt.src).URL
			admitted := 0
			for i := range 8 {
				base := a
				if i%2 == 1 {
					base = b
				}
				if status, _ := get(t, base+"/", "a.test"); status == 200 {
					admitted++
				} else if status != 429 {
					t.Fatalf("request %d: %d", i, status)
				}
			}
			if admitted != tt.admitted {
				t.Errorf("admitted %d of 8, want %d", admitted, tt.admitted)
			}
		})
	}
}

// TestSharedStoreHugeReply: a store that answers the rate-limit script
// with a reply declaring 2 GB (or a huge array) is a store error: the
// request follows on_store_error, and sluice does not allocate for it.
func TestSharedStoreHugeReply(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var reply atomic.Value
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { fakeRedis(c, reply.Load().(string)) })
		}
	})
	tests := []struct {
		name, onError, reply string
		status               int
	}{
		{"a huge string, deny", "deny", "$1999999999\r\n", 503},
		{"a huge array, deny", "deny", "*1999999999\r\n", 503},
		{"a huge string, allow", "allow", "$1999999999\r\n", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reply.Store(tt.reply)
			src := fmt.Sprintf(`
store "redis" {
  address = %q
  prefix  = %q
}
site "a.test" {
  listen = ["127.0.0.1:PORT"]
  route "/" {
    respond { body = "ok" }
    rate_limit {
      rate           = "100/s"
      on_store_error = %q
    }
  }
}
`, ln.Addr().String(), t.Name()+":", tt.onError)
			base := startConfig(t, src).URL
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			status, _ := get(t, base+"/", "a.test")
			runtime.ReadMemStats(&after)
			if status != tt.status {
				t.Errorf("status %d, want %d", status, tt.status)
			}
			if d := after.TotalAlloc - before.TotalAlloc; d > 64<<20 {
				t.Errorf("one request allocated %d MiB", d>>20)
			}
		})
	}
}

// fakeRedis answers HELLO as a RESP2-only server and every other command
// with reply, until the client goes or 5 s pass.
func fakeRedis(c net.Conn, reply string) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "*") {
			return
		}
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		var name string
		for i := range min(n, 64) {
			h, err := r.ReadString('\n')
			if err != nil {
				return
			}
			l, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(h, "$")))
			b := make([]byte, min(max(l, 0), 1<<20)+2)
			if _, err := io.ReadFull(r, b); err != nil {
				return
			}
			if i == 0 {
				name = strings.ToUpper(string(b[:len(b)-2]))
			}
		}
		out := reply
		if name == "HELLO" {
			out = "-ERR unknown command\r\n"
		}
		if _, err := io.WriteString(c, out); err != nil {
			return
		}
	}
}

// TestSharedStoreOutage: with the store down, a limit with the default
// on_store_error ("local") still limits, by this instance's buckets; the
// answers carry the RateLimit headers; every decision is counted; the
// outage is logged once (not per request); and a store that says
// required = true turns /readyz to 503.
func TestSharedStoreOutage(t *testing.T) {
	dead := freePort(t) // nothing listens there
	port, aport := freePort(t), freePort(t)
	src := fmt.Sprintf(`
admin {
  listen = "127.0.0.1:%d"
}
store "redis" {
  address  = "127.0.0.1:%d"
  prefix   = %q
  required = true
}
site "outage.test" {
  listen = ["127.0.0.1:%d"]
  route "/" {
    respond { body = "ok" }
    rate_limit {
      rate  = "1/m"
      burst = 2
    }
  }
}
`, aport, dead, t.Name()+":", port)
	dir := t.TempDir()
	path := filepath.Join(dir, "sluice.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	var mu sync.Mutex
	inst, err := Start(InstanceOptions{Path: path, Log: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Shutdown(context.Background())
	c := &http.Client{Timeout: 5 * time.Second}
	base := fmt.Sprintf("http://127.0.0.1:%d/", port)
	for i, want := range []struct {
		status    int
		rateLimit string
	}{
		{200, `"default";r=1;t=60`},
		{200, `"default";r=0;t=120`},
		{429, `"default";r=0;t=120`},
	} {
		req, _ := http.NewRequest("GET", base, nil)
		req.Host = "outage.test"
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want.status || resp.Header.Get("RateLimit") != want.rateLimit || resp.Header.Get("RateLimit-Policy") != `"default";q=2;w=120` {
			t.Errorf("request %d: %d RateLimit %q RateLimit-Policy %q, want %d %q", i, resp.StatusCode, resp.Header.Get("RateLimit"), resp.Header.Get("RateLimit-Policy"), want.status, want.rateLimit)
		}
		if want.status == 429 && resp.Header.Get("Retry-After") != "60" {
			t.Errorf("429 Retry-After %q, want 60", resp.Header.Get("Retry-After"))
		}
	}
	admin := fmt.Sprintf("http://127.0.0.1:%d", aport)
	if code, body := tget(t, c, admin+"/readyz"); code != 503 || !strings.Contains(body, "store") {
		t.Errorf("/readyz with a required store down: %d %q, want 503 naming the store", code, body)
	}
	_, metrics := tget(t, c, admin+"/metrics")
	for _, want := range []string{
		`sluice_rate_limit_decisions_total{decision="local_admit",route="outage.test/"} 2`,
		`sluice_rate_limit_decisions_total{decision="local_refuse",route="outage.test/"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, grepLines(metrics, "sluice_rate_limit"))
		}
	}
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if n := strings.Count(out, "store: cannot connect"); n != 1 {
		t.Errorf("the outage logged %d times, want once:\n%s", n, out)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
