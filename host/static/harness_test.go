package static

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/sluicehq/sluice/host/exchange/exchangetest"
)

// tc is one request and what its response must be, checked on every
// engine.
type tc struct {
	name   string
	method string            // default GET
	path   string            // sent as is (raw request target)
	hdr    map[string]string // request headers
	status int
	body   *string           // nil: not checked
	want   map[string]string // response headers; "" means absent
	check  func(t *testing.T, resp *http.Response, body []byte)
	// skip names engines that cannot carry the request (net/http's
	// HTTP/2 server and quic-go's HTTP/3 server drop a :path that is not
	// a valid URI).
	skip string
}

func str(s string) *string { return &s }

// writeTree creates files (name → content) under a new temporary
// directory; a name ending in "/" makes a directory.
func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// newHandler builds a handler that trusts fresh files at once, so that
// the cache is exercised from the first request.
func newHandler(t testing.TB, opts Options) *Handler {
	t.Helper()
	h, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	h.racy.Store(0)
	t.Cleanup(func() { h.Close() })
	return h
}

// runCases runs cases over every engine, each case twice so that both the
// first (slow path) and the cached answer are checked.
func runCases(t *testing.T, h *Handler, cases []tc) {
	t.Helper()
	for _, e := range exchangetest.Engines(t, h) {
		t.Run(e.Name, func(t *testing.T) {
			for _, c := range cases {
				if slices.Contains(strings.Split(c.skip, ","), e.Name) {
					continue
				}
				for round := 0; round < 2; round++ {
					resp, body := do(t, e, c.method, c.path, c.hdr)
					where := c.name + " (" + strconv.Itoa(round) + ")"
					if resp.StatusCode != c.status {
						t.Errorf("%s: %s %s: status %d, want %d (body %q)", where, c.method, c.path, resp.StatusCode, c.status, trunc(body))
						continue
					}
					if resp.Proto != e.Proto {
						t.Errorf("%s: proto %s, want %s", where, resp.Proto, e.Proto)
					}
					if c.body != nil && string(body) != *c.body {
						t.Errorf("%s: body %q, want %q", where, trunc(body), trunc([]byte(*c.body)))
					}
					for k, v := range c.want {
						got := resp.Header.Get(k)
						if k == "Content-Length" && v != "" {
							// The client may move it into resp.ContentLength.
							got = strconv.FormatInt(resp.ContentLength, 10)
						}
						if got != v {
							t.Errorf("%s: %s %s: header %s = %q, want %q", where, c.method, c.path, k, got, v)
						}
					}
					if c.check != nil {
						c.check(t, resp, body)
					}
				}
			}
		})
	}
}

// do sends a request with a raw request target.
func do(t testing.TB, e exchangetest.Engine, method, target string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	if method == "" {
		method = "GET"
	}
	req, err := http.NewRequest(method, e.URL+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	p, q, _ := strings.Cut(target, "?")
	req.URL.Opaque, req.URL.RawQuery = p, q
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := e.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, target, err)
	}
	return resp, body
}

func trunc(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "…"
	}
	return string(b)
}

// settle waits until h's watcher has handled every file-system event
// queued before the call, so that "the next request" after a change is
// well defined: the kernel queues an event when the change is made, and
// the handler reads it microseconds later, on its own goroutine. It
// writes a probe file in a directory of its own, watched by the same
// watcher: inotify delivers one watcher's events in order, so once the
// probe's event is seen, so are all before it. Without a watcher it does
// nothing.
func settle(t testing.TB, h *Handler) {
	t.Helper()
	w := h.w
	if w == nil {
		return
	}
	dir := t.TempDir()
	if err := w.fw.Add(dir); err != nil {
		t.Fatalf("settle: %v", err)
	}
	defer w.fw.Remove(dir)
	name := filepath.Join(dir, "probe")
	seen := make(chan struct{})
	var once sync.Once
	f := func(ev fsnotify.Event) {
		if ev.Name == name {
			once.Do(func() { close(seen) })
		}
	}
	w.hook.Store(&f)
	defer w.hook.Store(nil)
	if err := os.WriteFile(name, nil, 0o644); err != nil {
		t.Fatalf("settle: %v", err)
	}
	select {
	case <-seen:
	case <-time.After(5 * time.Second):
		t.Fatal("settle: the watcher did not report its probe within 5s")
	}
}
