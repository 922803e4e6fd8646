package static

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange/exchangetest"
)

// TestStale changes files under a warm cache in every way a deploy can
// and checks that the next request always sees the new state.
func TestStale(t *testing.T) {
	for _, maxFile := range []int64{0, -1} { // bytes in memory, then sendfile
		t.Run(fmt.Sprintf("maxfile=%d", maxFile), func(t *testing.T) {
			dir := writeTree(t, map[string]string{"f.txt": "AAAA", "d/index.html": "index1", "app.js": strings.Repeat("js;", 10), "app.js.gz": "GZ1"})
			h := newHandler(t, Options{Root: dir, MemCacheMaxFile: maxFile, Precompressed: []string{"gzip"}})
			f := filepath.Join(dir, "f.txt")
			mtime := time.Now().Add(-time.Hour).Truncate(time.Second)
			for _, e := range exchangetest.Engines(t, h) {
				t.Run(e.Name, func(t *testing.T) {
					expect := func(step, path, want string, status int, hdr map[string]string) {
						t.Helper()
						settle(t, h)
						for i := 0; i < 2; i++ {
							resp, body := do(t, e, "GET", path, hdr)
							if resp.StatusCode != status || (status == 200 && string(body) != want) {
								t.Fatalf("%s: %s: got %d %q, want %d %q", step, path, resp.StatusCode, body, status, want)
							}
						}
					}
					write := func(name, content string, mt time.Time) {
						t.Helper()
						must(t, os.WriteFile(name, []byte(content), 0o644))
						must(t, os.Chtimes(name, mt, mt))
					}
					write(f, "AAAA", mtime)
					expect("start", "/f.txt", "AAAA", 200, nil)

					mtime = mtime.Add(time.Second)
					write(f, "BBBB", mtime)
					expect("in place, same size, new mtime", "/f.txt", "BBBB", 200, nil)

					write(f, "CCCC", mtime)
					expect("in place, same size, same mtime", "/f.txt", "CCCC", 200, nil)

					tmp := filepath.Join(dir, "tmp")
					write(tmp, "DDDD", mtime)
					must(t, os.Rename(tmp, f))
					expect("replaced by rename, same size and mtime", "/f.txt", "DDDD", 200, nil)

					must(t, os.Remove(f))
					expect("deleted", "/f.txt", "", 404, nil)

					write(f, "EEEEEE", mtime)
					expect("recreated", "/f.txt", "EEEEEE", 200, nil)

					idx := filepath.Join(dir, "d/index.html")
					write(idx, "index1", mtime)
					expect("index", "/d/", "index1", 200, nil)
					write(idx, "index2", mtime)
					expect("index changed", "/d/", "index2", 200, nil)
					must(t, os.Remove(idx))
					expect("index deleted", "/d/", "", 404, nil)
					write(idx, "index1", mtime)

					gz := filepath.Join(dir, "app.js.gz")
					ae := map[string]string{"Accept-Encoding": "gzip"}
					write(gz, "GZ1", mtime)
					expect("sidecar", "/app.js", "GZ1", 200, ae)
					write(gz, "GZ2", mtime)
					expect("sidecar changed", "/app.js", "GZ2", 200, ae)
					must(t, os.Remove(gz))
					expect("sidecar deleted", "/app.js", strings.Repeat("js;", 10), 200, ae)
					write(gz, "GZ1", mtime)
				})
			}
		})
	}
}

// TestRacyNotCached checks that, without file-system events, a file
// changed within the racy window is served from disk each time rather
// than cached; with events it is cached at once (a second change in the
// same tick sends its own event), which is what keeps a client asking for
// a file just deployed from reopening it on every request.
func TestRacyNotCached(t *testing.T) {
	for _, c := range []struct {
		name    string
		noWatch bool
		cached  int
	}{{"interval", true, 0}, {"events", false, 1}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			must(t, os.WriteFile(filepath.Join(dir, "new.txt"), []byte("fresh"), 0o644))
			must(t, os.WriteFile(filepath.Join(dir, "old.txt"), []byte("old"), 0o644))
			h, err := New(Options{Root: dir, NoWatch: c.noWatch})
			must(t, err)
			defer h.Close()
			if !c.noWatch && h.w == nil {
				t.Skip("no file-system events here")
			}
			h.racy.Store(int64(time.Hour)) // every file is "just changed"
			for _, e := range exchangetest.Engines(t, h) {
				for i := 0; i < 2; i++ {
					if resp, body := do(t, e, "GET", "/new.txt", nil); resp.StatusCode != 200 || string(body) != "fresh" {
						t.Fatalf("%s: %d %q", e.Name, resp.StatusCode, body)
					}
				}
			}
			if n := h.cache.len(); n != c.cached {
				t.Errorf("racy file: %d entries cached, want %d", n, c.cached)
			}
			h.racy.Store(0)
			do(t, exchangetest.Engines(t, h)[0], "GET", "/old.txt", nil)
			if n := h.cache.len(); n != c.cached+1 {
				t.Errorf("quiet file not cached: %d entries", n)
			}
		})
	}
}

// TestHammerStale serves files from many goroutines while another
// replaces them; every answer must be one whole version with its own
// length, never a mix.
func TestHammerStale(t *testing.T) {
	dir := t.TempDir()
	version := func(n int, size int) string {
		return strings.Repeat(fmt.Sprintf("v%03d;", n%1000), size)
	}
	for _, name := range []string{"small.txt", "large.txt"} {
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(version(0, 10)), 0o644))
	}
	h := newHandler(t, Options{Root: dir, MemCacheMaxFile: 4096})
	engines := exchangetest.Engines(t, h)
	stop := make(chan struct{})
	var writes atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 1; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			for _, name := range []string{"small.txt", "large.txt"} {
				size := 10 + n%7
				if name == "large.txt" {
					size = 2000 + n%7 // beyond MemCacheMaxFile: sendfile
				}
				tmp := filepath.Join(dir, name+".tmp")
				must(t, os.WriteFile(tmp, []byte(version(n, size)), 0o644))
				must(t, os.Rename(tmp, filepath.Join(dir, name)))
			}
			writes.Add(1)
			time.Sleep(time.Millisecond)
		}
	}()
	var bad atomic.Int64
	var clients sync.WaitGroup
	deadline := time.Now().Add(400 * time.Millisecond)
	for _, e := range engines {
		for g := 0; g < 4; g++ {
			clients.Add(1)
			go func() {
				defer clients.Done()
				for time.Now().Before(deadline) {
					for _, name := range []string{"/small.txt", "/large.txt"} {
						resp, body := do(t, e, "GET", name, nil)
						if resp.StatusCode != http.StatusOK {
							bad.Add(1)
							t.Errorf("%s %s: status %d", e.Name, name, resp.StatusCode)
							continue
						}
						if len(body) < 5 || string(body) != strings.Repeat(string(body[:5]), len(body)/5) ||
							resp.ContentLength != int64(len(body)) {
							if bad.Add(1) < 5 {
								t.Errorf("%s %s: torn or mixed body (%d bytes): %q", e.Name, name, len(body), trunc(body))
							}
						}
					}
				}
			}()
		}
	}
	clients.Wait()
	close(stop)
	wg.Wait()
	if writes.Load() < 10 {
		t.Logf("only %d rewrites", writes.Load())
	}
}
