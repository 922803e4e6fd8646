package host

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/runtime"
)

// Filter bodies are bounded (runtime/RATIONALE.md): a body a filter never
// reads is never buffered, one it reads is held up to max_buffer, and a
// read waiting on the client stops before the filter's deadline. Each
// test runs over HTTP/1.1 (fasthttp) and h2c (net/http).

var filterEngines = []string{"h1", "h2c"}

// filterClient speaks proto to the listener at base.
func filterClient(t *testing.T, proto string) *http.Client {
	var p http.Protocols
	if proto == "h2c" {
		p.SetUnencryptedHTTP2(true)
	} else {
		p.SetHTTP1(true)
	}
	tr := &http.Transport{Protocols: &p}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}

func guestModule(t *testing.T, rel string) string {
	p, err := filepath.Abs(rel)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// zeros is an endless source of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestFilterHeadersStreamLargeBody: the shipped headers filter asks for
// buffer_response to change a response header, but never reads the body:
// a 128 MiB proxied response (sized and chunked) passes through it
// unbuffered. The heap stays flat; before lazy buffering it grew by the
// body size.
func TestFilterHeadersStreamLargeBody(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 128 MiB per case")
	}
	const size = 128 << 20
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("sized") != "" {
			w.Header().Set("Content-Length", strconv.Itoa(size))
		}
		w.Header().Set("X-Powered-By", "backend")
		io.CopyN(w, zeros{}, size)
	}))
	defer backend.Close()
	base := startConfig(t, `
listener "127.0.0.1:PORT" {
  h2c = true
}
filter "headers" {
  module = "`+guestModule(t, "../filters/headers/headers.wasm")+`"
  config = { response = { set = { "X-Frame-Options" = "DENY" }, remove = ["X-Powered-By"] } }
}
site "*" {
  listen = ["127.0.0.1:PORT"]
  route "/" {
    filters = ["headers"]
    proxy {
      upstreams = ["`+backend.URL+`"]
    }
  }
}
`).URL
	for _, proto := range filterEngines {
		for _, sized := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/sized=%v", proto, sized), func(t *testing.T) {
				c := filterClient(t, proto)
				url := base + "/big"
				if sized {
					url += "?sized=1"
				}
				goruntime.GC()
				var before goruntime.MemStats
				goruntime.ReadMemStats(&before)
				peak := heapPeak(t)
				resp, err := c.Get(url)
				if err != nil {
					t.Fatal(err)
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				maxInuse := peak()
				var after goruntime.MemStats
				goruntime.ReadMemStats(&after)
				if err != nil || n != size || resp.StatusCode != 200 {
					t.Fatalf("status %d, %d bytes, %v; want 200, %d bytes", resp.StatusCode, n, err, size)
				}
				if resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("X-Powered-By") != "" {
					t.Errorf("headers not changed: %v", resp.Header)
				}
				growth := int64(maxInuse) - int64(before.HeapInuse)
				alloc := after.TotalAlloc - before.TotalAlloc
				t.Logf("%d MiB streamed: heap in use grew by at most %.1f MiB, %.1f MiB allocated in all",
					size>>20, float64(growth)/(1<<20), float64(alloc)/(1<<20))
				if growth > 16<<20 || (alloc > size/4 && !raceEnabled) {
					t.Errorf("heap grew by %d bytes, %d allocated, for a %d-byte body: the body was buffered", growth, alloc, size)
				}
			})
		}
	}
}

// heapPeak samples HeapInuse every 10ms until the returned function is
// called, which returns the largest sample.
func heapPeak(t *testing.T) func() uint64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			var m goruntime.MemStats
			goruntime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	f := func() uint64 {
		once.Do(func() { close(stop); <-done })
		return peak.Load()
	}
	t.Cleanup(func() { f() })
	return f
}

// TestFilterMaxBuffer: a guest that reads bodies (runtime/testdata/body:
// the request body with buffer_request, the response body to wrap it)
// gets at most max_buffer of each: a larger request body is 413, a larger
// response body (streamed by the proxy, or a static file) 502, and
// neither is read past the limit. The pool of one keeps serving.
func TestFilterMaxBuffer(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		if r.URL.Query().Get("sized") == "" {
			w.Header().Set("Content-Type", "text/plain") // chunked: size unknown
		} else {
			w.Header().Set("Content-Length", strconv.Itoa(n))
		}
		io.Copy(w, io.LimitReader(zeros{}, int64(n)))
	}))
	defer backend.Close()
	srv := startConfig(t, `
admin {
  listen = "127.0.0.1:`+strconv.Itoa(freePort(t))+`"
}
listener "127.0.0.1:PORT" {
  h2c = true
}
filter "body" {
  module     = "`+guestModule(t, "../runtime/testdata/body.wasm")+`"
  max_buffer = "1KiB"
  pool {
    size = 1
  }
}
site "*" {
  listen = ["127.0.0.1:PORT"]
  route "/" {
    filters = ["body"]
    proxy {
      upstreams = ["`+backend.URL+`"]
    }
  }
  route "/static/" {
    filters = ["body"]
    static { root = "./public" }
  }
}
`)
	dir := filepath.Join(filepath.Dir(srv.Config), "public") // the route prefix is stripped
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, size := range map[string]int{"small.txt": 10, "big.txt": 4 << 10} {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		path string
		body int
		want int
	}{
		{"fits", "/?n=1024&sized=1", 1024, 200},
		{"request over", "/?n=10", 1025, 413},
		{"request far over", "/?n=10", 1 << 20, 413},
		{"sized response over", "/?n=1025&sized=1", 1, 502},
		{"chunked response over", "/?n=4194304", 1, 502},
		{"small static file", "/static/small.txt", -1, 200},
		{"static file over", "/static/big.txt", -1, 502},
	}
	for _, proto := range filterEngines {
		c := filterClient(t, proto)
		for _, tt := range tests {
			t.Run(proto+"/"+tt.name, func(t *testing.T) {
				req, _ := http.NewRequest("POST", srv.URL+tt.path, strings.NewReader(strings.Repeat("a", max(tt.body, 0))))
				if tt.body < 0 {
					req, _ = http.NewRequest("GET", srv.URL+tt.path, nil)
				}
				req.Header.Set("Accept-Encoding", "identity") // the guest sees the file as it is
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tt.want {
					t.Fatalf("status %d %q, want %d", resp.StatusCode, b, tt.want)
				}
				if tt.want == 200 && !strings.HasPrefix(string(b), "wrapped:") {
					t.Errorf("body %.40q, want it wrapped by the guest", b)
				}
			})
		}
	}
	// Counted per phase, and not as filter errors.
	admin := "http://" + srv.Inst.AdminAddr()
	for phase, want := range map[string]float64{"request": 4, "response": 6} {
		name := `sluice_filter_invocations_total{filter="body",outcome="buffer_limit",phase="` + phase + `"}`
		if v := metricValue(t, admin, name); v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	if lines := metricLines(t, admin, `sluice_filter_errors_total{filter="body"`); len(lines) != 0 {
		t.Errorf("counted as filter errors: %v", lines)
	}
}

// TestFilterSlowBodyKeepsPool: two clients trickle a chunked request body
// through a route whose filter reads it (pool of two). Each times out on
// its own, with 408, in about the filter's timeout; meanwhile the other
// requests on the route keep getting their answer, never 503.
func TestFilterSlowBodyKeepsPool(t *testing.T) {
	const timeout = 300 * time.Millisecond
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	}))
	defer backend.Close()
	base := startConfig(t, `
listener "127.0.0.1:PORT" {
  h2c          = true
  read_timeout = "15s"
}
filter "body" {
  module  = "`+guestModule(t, "../runtime/testdata/body.wasm")+`"
  timeout = "`+timeout.String()+`"
  pool {
    size = 2
  }
}
site "*" {
  listen = ["127.0.0.1:PORT"]
  route "/" {
    filters = ["body"]
    proxy {
      upstreams = ["`+backend.URL+`"]
    }
  }
}
`).URL
	addr := strings.TrimPrefix(base, "http://")
	for _, proto := range filterEngines {
		t.Run(proto, func(t *testing.T) {
			c := filterClient(t, proto)
			var wg sync.WaitGroup
			slow := make([]string, 2)
			took := make([]time.Duration, 2)
			for i := range slow {
				wg.Add(1)
				go func() {
					defer wg.Done()
					start := time.Now()
					if proto == "h1" {
						slow[i] = trickleH1(addr, 30)
					} else {
						slow[i] = trickleH2(c, base, 30)
					}
					took[i] = time.Since(start)
				}()
			}
			// Meanwhile: other requests on the route, for about 1.5s.
			time.Sleep(50 * time.Millisecond)
			var codes []int
			for deadline := time.Now().Add(1500 * time.Millisecond); time.Now().Before(deadline); {
				resp, err := c.Post(base+"/", "text/plain", strings.NewReader("hi"))
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				codes = append(codes, resp.StatusCode)
				time.Sleep(20 * time.Millisecond)
			}
			wg.Wait()
			for _, code := range codes {
				if code != 200 {
					t.Fatalf("a request beside the slow ones got %d (all: %v)", code, codes)
				}
			}
			for i := range slow {
				if slow[i] != "408" {
					t.Errorf("slow client %d: %q, want 408", i, slow[i])
				}
				if took[i] > timeout+time.Second {
					t.Errorf("slow client %d answered after %s, filter timeout %s", i, took[i], timeout)
				}
			}
			t.Logf("%d requests beside the slow ones, all 200; slow ones answered after %v", len(codes), took)
		})
	}
}

// trickleH1 sends a chunked POST one byte every 200ms, at most n bytes,
// and returns the status code of the response (or the error).
func trickleH1(addr string, n int) string {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err.Error()
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
	status := make(chan string, 1)
	go func() {
		_ = conn.SetReadDeadline(time.Now().Add(time.Duration(n)*200*time.Millisecond + 2*time.Second))
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil {
			status <- err.Error()
			return
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			status <- line
			return
		}
		status <- f[1]
	}()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for range n {
		select {
		case s := <-status:
			return s
		case <-tick.C:
			if _, err := io.WriteString(conn, "1\r\na\r\n"); err != nil {
				return <-status
			}
		}
	}
	return <-status
}

// slowReader yields one byte every 200ms, n in all.
type slowReader struct{ n int }

func (r *slowReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	time.Sleep(200 * time.Millisecond)
	r.n--
	p[0] = 'a'
	return 1, nil
}

// trickleH2 is trickleH1 over h2c: one stream with a slow body.
func trickleH2(c *http.Client, base string, n int) string {
	req, _ := http.NewRequest("POST", base+"/", &slowReader{n: n})
	req.ContentLength = -1
	resp, err := c.Do(req)
	if err != nil {
		return err.Error()
	}
	resp.Body.Close()
	return strconv.Itoa(resp.StatusCode)
}

// TestExchangesOfferBoundedReads: the runtime finds the bounded reads
// through optional interfaces, so a changed signature would silently turn
// them off; every engine's exchange must still implement them.
func TestExchangesOfferBoundedReads(t *testing.T) {
	h := exchange.HandlerFunc(func(x exchange.Exchange) error {
		if _, ok := x.(runtime.ReadDeadliner); !ok {
			return exchange.Errorf(500, "%T is not a runtime.ReadDeadliner", x)
		}
		if _, ok := x.(runtime.BodyBufferer); !ok {
			return exchange.Errorf(500, "%T is not a runtime.BodyBufferer", x)
		}
		return nil
	})
	for _, e := range exchangetest.Engines(t, h) {
		resp, err := e.Client.Get(e.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d %s", e.Name, resp.StatusCode, b)
		}
	}
}
