package host

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/chain"
	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/filtertest"
)

// syncBuffer is a log sink written by guest calls on several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.b.String()
	s.b.Reset()
	return out
}

// wafFilter starts the shipped waf filter with config; its guest log
// lines go to the returned buffer.
func wafFilter(t testing.TB, config string) (*runtime.Filter, *syncBuffer) {
	t.Helper()
	return wafFilterBuffer(t, config, 64<<10)
}

// wafFilterBuffer is wafFilter with the filter's max_buffer.
func wafFilterBuffer(t testing.TB, config string, maxBuffer int64) (*runtime.Filter, *syncBuffer) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the waf module takes seconds to compile")
	}
	ctx := context.Background()
	logs := &syncBuffer{}
	e, err := runtime.NewEngine(ctx, runtime.EngineOptions{
		CacheDir: filepath.Join(os.TempDir(), "sluice-test-wasm-cache"),
		Logger:   slog.New(slog.NewTextHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(ctx) })
	wasm, err := os.ReadFile("../filters/waf/waf.wasm")
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.Compile(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(ctx) })
	f, err := e.NewFilter(ctx, "waf", m, runtime.FilterOptions{
		Config:      []byte(config),
		PoolSize:    1,
		MemoryLimit: 256 << 20,
		MaxBuffer:   maxBuffer,
		Timeout:     10 * time.Second,
		InitTimeout: 60 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close(ctx) })
	return f, logs
}

// echoBody answers 200 with the request body it got.
var echoBody = exchange.HandlerFunc(func(x exchange.Exchange) error {
	b, err := io.ReadAll(io.LimitReader(x.RequestBody(), 1<<20))
	if err != nil {
		return err
	}
	x.SetBody(append([]byte("upstream:"), b...))
	return nil
})

type wafCase struct {
	name   string
	method string
	target string
	header [2]string
	body   string
	status int
	rules  []string // rule ids logged, at least
}

var wafAttacks = []wafCase{
	{name: "clean", method: "GET", target: "/products?id=42&sort=price", status: 200},
	{name: "clean post", method: "POST", target: "/login", body: "user=alice&password=correct+horse", status: 200},
	{name: "sqli query", method: "GET", target: "/products?id=" + url.QueryEscape("1' OR '1'='1"), status: 403, rules: []string{"942100", "949110"}},
	{name: "xss query", method: "GET", target: "/search?q=" + url.QueryEscape("<script>alert(1)</script>"), status: 403, rules: []string{"941100", "949110"}},
	{name: "path traversal", method: "GET", target: "/download?file=" + url.QueryEscape("../../../../etc/passwd"), status: 403, rules: []string{"930120", "949110"}},
	{name: "scanner user agent", method: "GET", target: "/", header: [2]string{"User-Agent", "sqlmap/1.8#stable (https://sqlmap.org)"}, status: 403, rules: []string{"913100", "949110"}},
	{name: "sqli form body", method: "POST", target: "/login", body: "user=" + url.QueryEscape("admin' UNION SELECT password FROM users--") + "&password=x", status: 403, rules: []string{"942100", "949110"}},
	{name: "rce query", method: "GET", target: "/ping?host=" + url.QueryEscape("127.0.0.1; cat /etc/passwd"), status: 403, rules: []string{"949110"}},
}

var ruleLine = regexp.MustCompile(`msg="waf: rule (\d+) matched: [^\n]*?\[id \\"(\d+)\\"\]`)

// TestWAFBlocksThroughServer: the shipped waf filter, in block mode at
// paranoia 1, refuses the CRS's attack classes with 403 and lets clean
// requests (and their bodies) through, over every engine; each matched
// rule is logged once, with its id.
func TestWAFBlocksThroughServer(t *testing.T) {
	f, logs := wafFilter(t, `{"mode": "block", "paranoia": 1}`)
	for _, en := range exchangetest.Engines(t, chain.New([]chain.Filter{f}, echoBody)) {
		t.Run(en.Name, func(t *testing.T) {
			for _, c := range wafAttacks {
				logs.take()
				status, body := wafDo(t, en, c)
				if status != c.status {
					t.Errorf("%s: status %d, want %d (body %q); rules matched: %v", c.name, status, c.status, body, matched(logs.take()))
					continue
				}
				if c.status == 200 && !strings.HasPrefix(body, "upstream:"+c.body) {
					t.Errorf("%s: body %q, want the upstream's echo of %q", c.name, body, c.body)
				}
				checkRules(t, c, logs.take())
			}
		})
	}
}

// TestWAFRefusesWhatItCannotInspect: the padding attack of issue 21
// (finding 5), an XSS placed past request_body_limit in a form, a
// multipart, a JSON and an XML body, is refused with 413 over every
// engine, and nothing reaches the upstream; before, the guest inspected
// the first 128 KiB and let the rest through (200). And the work per
// request is bounded (inspect_limit): a single 10 KB form field, which
// costs the CRS about a second of the guest's CPU, is refused with 413
// before the rules run, in a fraction of that.
func TestWAFRefusesWhatItCannotInspect(t *testing.T) {
	f, _ := wafFilterBuffer(t, `{"mode": "block", "paranoia": 1}`, 1<<20)
	var reached atomic.Int64
	next := exchange.HandlerFunc(func(x exchange.Exchange) error {
		reached.Add(1)
		return echoBody.ServeExchange(x)
	})
	xss := "<script>alert(1)</script>"
	pad := strings.Repeat("x", 140000)
	bodies := []struct{ name, ct, body string }{
		{"urlencoded", "application/x-www-form-urlencoded", "a=" + pad + "&q=" + url.QueryEscape(xss)},
		{"multipart", "multipart/form-data; boundary=B", "--B\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n" + pad +
			"\r\n--B\r\nContent-Disposition: form-data; name=\"q\"\r\n\r\n" + xss + "\r\n--B--\r\n"},
		{"json", "application/json", `{"a": "` + pad + `", "q": "` + xss + `"}`},
		{"xml", "application/xml", "<r><a>" + pad + "</a><q>" + xss + "</q></r>"},
	}
	for _, en := range exchangetest.Engines(t, chain.New([]chain.Filter{f}, next)) {
		t.Run(en.Name, func(t *testing.T) {
			post := func(ct, body string) (int, time.Duration) {
				req, _ := http.NewRequest("POST", en.URL+"/form", strings.NewReader(body))
				req.Host = "shop.example"
				req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) sluice-test")
				req.Header.Set("Accept", "text/html")
				req.Header.Set("Content-Type", ct)
				start := time.Now()
				resp, err := en.Client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode, time.Since(start)
			}
			reached.Store(0)
			for _, b := range bodies {
				if status, _ := post(b.ct, b.body); status != http.StatusRequestEntityTooLarge {
					t.Errorf("%s padded past request_body_limit: %d, want 413", b.name, status)
				}
			}
			status, took := post("application/x-www-form-urlencoded", "a="+strings.Repeat("x", 10<<10))
			if status != http.StatusRequestEntityTooLarge || took > 500*time.Millisecond {
				t.Errorf("a 10 KB field: %d after %s, want 413 before the rules run", status, took)
			}
			if n := reached.Load(); n != 0 {
				t.Errorf("%d refused requests reached the upstream", n)
			}
		})
	}
}

// TestWAFTimeoutSparesOthers: a request that runs the waf filter (a Go
// guest) past its timeout fails alone; the requests whose handle_request
// ran on the same instance, with their Coraza transactions kept there for
// the response phase (response_body_limit), still get their
// handle_response on it once the interrupted call returned: the Go
// runtime of the guest takes the call again, and each transaction ends
// (its score report, 980170, logged). Issue 21, finding 4, with the guest
// of the report.
func TestWAFTimeoutSparesOthers(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the waf module takes seconds to compile")
	}
	ctx := context.Background()
	logs := &syncBuffer{}
	e, err := runtime.NewEngine(ctx, runtime.EngineOptions{
		CacheDir: filepath.Join(os.TempDir(), "sluice-test-wasm-cache"),
		Logger:   slog.New(slog.NewTextHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(ctx) })
	wasm, err := os.ReadFile("../filters/waf/waf.wasm")
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.Compile(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	f, err := e.NewFilter(ctx, "waf", m, runtime.FilterOptions{
		// No inspect_limit: a 50 KB field costs the guest seconds.
		Config:      []byte(`{"inspect_limit": 0, "response_body_limit": 4096}`),
		PoolSize:    1,
		Timeout:     300 * time.Millisecond,
		InitTimeout: 60 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close(ctx) })
	post := func(body string) *filtertest.Exchange {
		// No Content-Length: rule 920180 scores each transaction, so
		// that its end in phase 5 is logged (980170).
		x := filtertest.NewExchange("POST", "/login", "Host", "shop.example", "User-Agent", "Mozilla/5.0", "Accept", "text/html",
			"Content-Type", "application/x-www-form-urlencoded")
		x.ReqBody = strings.NewReader(body)
		return x
	}
	var xs []*filtertest.Exchange
	var calls []*runtime.Call
	for range 3 {
		x := post("user=alice")
		c, err := f.HandleRequest(x)
		if err != nil || c == nil {
			t.Fatal(c, err)
		}
		xs, calls = append(xs, x), append(calls, c)
	}
	if _, err := f.HandleRequest(post("a=" + strings.Repeat("x", 50<<10))); !errors.Is(err, runtime.ErrTimeout) {
		t.Fatalf("the 50 KB field: %v, want ErrTimeout", err)
	}
	logs.take()
	for i, c := range calls {
		xs[i].SetResponseHeader("Content-Type", "text/plain")
		xs[i].SetBody([]byte("hello"))
		if err := c.HandleResponse(xs[i], false); err != nil || xs[i].Status() != 200 {
			t.Errorf("request %d: handle_response %v, status %d; want nil, 200", i, err, xs[i].Status())
		}
	}
	if n := strings.Count(logs.take(), "rule 980170 matched"); n != len(calls) {
		t.Errorf("%d transactions ended in the response phase, want %d", n, len(calls))
	}
}

// TestWAFDetectOnly: in detect mode an attack passes, and its matches
// are logged.
func TestWAFDetectOnly(t *testing.T) {
	f, logs := wafFilter(t, `{"mode": "detect", "paranoia": 4}`)
	en := exchangetest.Engines(t, chain.New([]chain.Filter{f}, echoBody))[0]
	c := wafAttacks[2]
	status, _ := wafDo(t, en, c)
	if status != 200 {
		t.Fatalf("detect mode: status %d, want 200", status)
	}
	checkRules(t, c, logs.take())
}

func wafDo(t *testing.T, en exchangetest.Engine, c wafCase) (int, string) {
	t.Helper()
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequest(c.method, en.URL+c.target, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "shop.example" // not a numeric IP: CRS rule 920350
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) sluice-test")
	req.Header.Set("Accept", "text/html")
	if c.body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if c.header[0] != "" {
		req.Header.Set(c.header[0], c.header[1])
	}
	resp, err := en.Client.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// matched counts the rules logged, by id.
func matched(log string) map[string]int {
	seen := map[string]int{}
	for _, m := range ruleLine.FindAllStringSubmatch(log, -1) {
		seen[m[1]]++
	}
	return seen
}

// checkRules: every rule of c was logged exactly once, on a line of its
// own that names its id twice (the filter's prefix and Coraza's [id]).
func checkRules(t *testing.T, c wafCase, log string) {
	t.Helper()
	seen := map[string]int{}
	for _, m := range ruleLine.FindAllStringSubmatch(log, -1) {
		if m[1] != m[2] {
			t.Errorf("%s: line names rule %s and [id %s]", c.name, m[1], m[2])
		}
		seen[m[1]]++
	}
	if len(c.rules) == 0 && len(seen) != 0 {
		t.Errorf("%s: a clean request matched %v", c.name, seen)
	}
	for _, id := range c.rules {
		if seen[id] != 1 {
			t.Errorf("%s: rule %s logged %d times, want 1; rules matched: %v", c.name, id, seen[id], seen)
		}
	}
}

// TestWAFMatchesCounted: through a served config with metrics, each rule
// the waf filter logs is counted in sluice_filter_log_records_total
// (level warn): a clean request adds nothing, an attack one per match.
func TestWAFMatchesCounted(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the waf module takes seconds to compile")
	}
	srv := startConfig(t, `
server {
  cache_dir = "`+filepath.Join(os.TempDir(), "sluice-test-wasm-cache")+`"
}
admin {
  listen = "127.0.0.1:`+strconv.Itoa(freePort(t))+`"
}
filter "waf" {
  module = "`+guestModule(t, "../filters/waf/waf.wasm")+`"
  memory       = "256MiB"
  timeout      = "10s"
  init_timeout = "5m"
  pool {
    size = 1
  }
}
site "*" {
  listen = ["127.0.0.1:PORT"]
  route "/" {
    filters = ["waf"]
    respond {
      status = 200
      body   = "ok"
    }
  }
}
`)
	admin := "http://" + srv.Inst.AdminAddr()
	const name = `sluice_filter_log_records_total{filter="waf",level="warn"}`
	get := func(target, ua string) int {
		req, _ := http.NewRequest("GET", srv.URL+target, nil)
		req.Host = "shop.example"
		req.Header.Set("User-Agent", ua)
		req.Header.Set("Accept", "text/html")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := get("/products?id=42", "Mozilla/5.0"); s != 200 {
		t.Fatalf("clean request: %d", s)
	}
	if lines := metricLines(t, admin, name); len(lines) != 0 {
		t.Errorf("after a clean request: %v, want no series", lines)
	}
	if s := get("/", "sqlmap/1.8"); s != 403 {
		t.Fatalf("scanner: %d, want 403", s)
	}
	// 913100 (the scanner's user agent), 949110 (the anomaly score) and
	// 980170 (the CRS's score report, phase 5).
	if v := metricValue(t, admin, name); v != 3 {
		t.Errorf("after a scanner's request %s = %v, want 3", name, v)
	}
}

// BenchmarkWAF runs the request of make bench-waf (a GET of a page, with
// the headers wrk sends there) through the waf filter, one at a time, at
// paranoia 1 blocking and paranoia 4 detecting. cpu-ns/req is the
// process's CPU time (all threads) per request.
func BenchmarkWAF(b *testing.B) {
	for _, c := range []struct{ name, config string }{
		{"p1-block", `{"mode": "block", "paranoia": 1}`},
		{"p4-detect", `{"mode": "detect", "paranoia": 4}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			f, _ := wafFilter(b, c.config)
			x := filtertest.NewExchange("GET", "/page.html", "Host", "bench.example", "User-Agent", "Mozilla/5.0 (X11; Linux x86_64) wrk", "Accept", "text/html", "Accept-Language", "en")
			var ru0, ru1 syscall.Rusage
			b.ReportAllocs()
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			b.ResetTimer()
			for range b.N {
				x.Reset("/page.html")
				call, err := f.HandleRequest(x)
				if err != nil {
					b.Fatal(err)
				}
				if call != nil {
					if err := call.HandleResponse(x, false); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/req")
		})
	}
}
