package static

import (
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange/exchangetest"
)

// TestWatchDeploy changes a served tree in every way a deploy does and
// checks that the next request sees each change: with file-system events
// as soon as the event is read (settle), and without them (NoWatch, or a
// file system that sends none) once CacheValid has passed. The root is
// a symlink to a release directory, as a release swap needs.
func TestWatchDeploy(t *testing.T) {
	const valid = 30 * time.Millisecond
	for _, mode := range []string{"events", "interval"} {
		t.Run(mode, func(t *testing.T) {
			base := t.TempDir()
			for _, rel := range []string{"1", "2"} {
				writeFiles(t, filepath.Join(base, "releases", rel), map[string]string{
					"a.txt": "A" + rel, "sub/b.txt": "B" + rel, "index.html": "I" + rel,
				})
			}
			must(t, os.Symlink(filepath.Join("releases", "1"), filepath.Join(base, "current")))
			dir := filepath.Join(base, "releases", "1")
			h, err := New(Options{Root: filepath.Join(base, "current"), NoWatch: mode == "interval", CacheValid: valid})
			must(t, err)
			defer h.Close()
			if mode == "events" && h.w == nil {
				t.Skip("no file-system events here")
			}
			h.racy.Store(0) // cache what was just written, so that staleness could show
			e := exchangetest.Engines(t, h)[0]
			next := func() {
				if mode == "events" {
					settle(t, h)
				} else {
					time.Sleep(valid + valid/2)
				}
			}
			expect := func(step, path string, status int, want string) {
				t.Helper()
				resp, body := do(t, e, "GET", path, nil)
				if resp.StatusCode != status || (status == http.StatusOK && string(body) != want) {
					t.Fatalf("%s: %s: %d %q, want %d %q", step, path, resp.StatusCode, body, status, want)
				}
			}
			warm := func(path, want string) {
				t.Helper()
				expect("warm", path, 200, want)
				expect("warm", path, 200, want)
				if h.cache.get([]byte(path)) == nil && !strings.HasSuffix(path, "/") {
					t.Fatalf("%s not cached", path)
				}
			}
			old := time.Now().Add(-time.Hour).Truncate(time.Second)
			write := func(name, content string) {
				t.Helper()
				must(t, os.WriteFile(name, []byte(content), 0o644))
				must(t, os.Chtimes(name, old, old)) // same size and mtime: only the content moved
			}
			a := filepath.Join(dir, "a.txt")

			warm("/a.txt", "A1")
			write(a, "X1")
			next()
			expect("overwritten in place", "/a.txt", 200, "X1")

			warm("/a.txt", "X1")
			write(a+".tmp", "Y1")
			must(t, os.Rename(a+".tmp", a))
			next()
			expect("written and renamed", "/a.txt", 200, "Y1")

			warm("/a.txt", "Y1")
			must(t, os.Remove(a))
			next()
			expect("deleted", "/a.txt", 404, "")

			warm("/sub/b.txt", "B1")
			must(t, os.Rename(filepath.Join(dir, "sub"), filepath.Join(dir, "sub2")))
			next()
			expect("directory renamed", "/sub/b.txt", 404, "")
			expect("directory renamed", "/sub2/b.txt", 200, "B1")
			write(filepath.Join(dir, "sub2", "b.txt"), "Z1")
			next()
			expect("changed in a renamed directory", "/sub2/b.txt", 200, "Z1")

			warm("/", "I1")
			warm("/sub2/b.txt", "Z1")
			tmp := filepath.Join(base, "current.tmp")
			must(t, os.Symlink(filepath.Join("releases", "2"), tmp))
			must(t, os.Rename(tmp, filepath.Join(base, "current"))) // ln -sfn, atomically
			next()
			expect("release swapped", "/a.txt", 200, "A2")
			expect("release swapped", "/", 200, "I2")
			expect("release swapped", "/sub2/b.txt", 404, "")
			expect("release swapped", "/sub/b.txt", 200, "B2")

			// The new release is watched in turn.
			warm("/sub/b.txt", "B2")
			write(filepath.Join(base, "releases", "2", "sub", "b.txt"), "W2")
			next()
			expect("changed in the new release", "/sub/b.txt", 200, "W2")
		})
	}
}

// TestWatchCached checks that a watched entry is served with no stat
// within CacheValid: its check time does not move.
func TestWatchCached(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.txt": "A"})
	h := newHandler(t, Options{Root: dir, CacheValid: time.Hour})
	if h.w == nil {
		t.Skip("no file-system events here")
	}
	e := exchangetest.Engines(t, h)[0]
	do(t, e, "GET", "/a.txt", nil)
	ent := h.cache.get([]byte("/a.txt"))
	if ent == nil {
		t.Fatal("not cached")
	}
	at := ent.checked.Load()
	must(t, os.Chmod(dir, 0o755)) // an event about the root itself, not the file
	settle(t, h)
	for i := 0; i < 3; i++ {
		do(t, e, "GET", "/a.txt", nil)
	}
	if got := h.cache.get([]byte("/a.txt")); got != ent || got.checked.Load() != at {
		t.Error("the entry was checked or rebuilt within CacheValid")
	}
}

// TestWatchCap checks that past MaxWatchedDirs a file is still served
// and cached, validated by the interval alone.
func TestWatchCap(t *testing.T) {
	dir := writeTree(t, map[string]string{"d1/a.txt": "A", "d2/b.txt": "B"})
	const valid = 30 * time.Millisecond
	h := newHandler(t, Options{Root: dir, CacheValid: valid})
	if h.w == nil {
		t.Skip("no file-system events here")
	}
	h.w.mu.Lock()
	h.w.max = 2 // the root and one directory
	h.w.mu.Unlock()
	e := exchangetest.Engines(t, h)[0]
	for _, p := range []string{"/d1/a.txt", "/d2/b.txt"} {
		do(t, e, "GET", p, nil)
		if h.cache.get([]byte(p)) == nil {
			t.Fatalf("%s not cached", p)
		}
	}
	h.w.mu.Lock()
	n := len(h.w.dirs)
	h.w.mu.Unlock()
	if n != 2 {
		t.Errorf("%d directories watched, want 2", n)
	}
	must(t, os.WriteFile(filepath.Join(dir, "d2", "b.txt"), []byte("C"), 0o644))
	time.Sleep(valid + valid/2)
	if _, body := do(t, e, "GET", "/d2/b.txt", nil); string(body) != "C" {
		t.Errorf("unwatched file after the interval: %q, want C", body)
	}
}

// TestWatchReleased checks that closing a handler (as a generation
// closing does) releases its watcher: no goroutine and no descriptor
// stays behind, even after a root swap.
func TestWatchReleased(t *testing.T) {
	base := t.TempDir()
	for _, rel := range []string{"1", "2"} {
		writeFiles(t, filepath.Join(base, rel), map[string]string{"a.txt": rel, "d/b.txt": rel})
	}
	root := filepath.Join(base, "current")
	must(t, os.Symlink("1", root))
	serve := func(t *testing.T) {
		h, err := New(Options{Root: root})
		must(t, err)
		// No server: an engine's own goroutines outlive it for a while.
		if _, err := h.entryFor("/d/b.txt"); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(base, "tmp")
		must(t, os.Symlink("2", tmp))
		must(t, os.Rename(tmp, root))
		settle(t, h)
		if e, err := h.entryFor("/d/b.txt"); err != nil || string(e.body) != "2" {
			t.Fatalf("after the swap: %v", err)
		}
		must(t, h.Close())
		must(t, os.Remove(root))
		must(t, os.Symlink("1", root))
	}
	serveOnce := func() { t.Run("serve", serve) }
	serveOnce() // warm up what is created once (engines, pools)
	runtime.GC()
	g0, fd0 := runtime.NumGoroutine(), openFDs(t)
	for i := 0; i < 10; i++ {
		serveOnce()
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > g0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > g0 {
		buf := make([]byte, 1<<16)
		t.Errorf("goroutines: %d after 10 handlers closed, %d before:\n%s", g, g0, buf[:runtime.Stack(buf, true)])
	}
	if fd := openFDs(t); fd > fd0 {
		t.Errorf("descriptors: %d after 10 handlers closed, %d before", fd, fd0)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content), 0o644))
		must(t, os.Chtimes(p, old, old))
	}
}

// TestCacheValidEveryRequest: cache_valid = "0s" (Options.CacheValid
// negative) checks the file on every request, so without events a
// change is still seen by the next request; the block's defaults are
// 1s and watching.
func TestCacheValidEveryRequest(t *testing.T) {
	b := BlockDefaults()
	if o := b.Options(""); o.CacheValid != DefaultCacheValid || o.NoWatch {
		t.Errorf("block defaults: CacheValid %v, NoWatch %v; want %v, false", o.CacheValid, o.NoWatch, DefaultCacheValid)
	}
	b.CacheValid, b.Watch = 0, false
	o := b.Options("")
	if o.CacheValid >= 0 || !o.NoWatch {
		t.Fatalf(`cache_valid = "0s", watch = false: CacheValid %v, NoWatch %v`, o.CacheValid, o.NoWatch)
	}
	dir := writeTree(t, map[string]string{"a.txt": "A"})
	o.Root = dir
	h := newHandler(t, o)
	e := exchangetest.Engines(t, h)[0]
	for _, want := range []string{"A", "B", "C"} {
		if want != "A" {
			p := filepath.Join(dir, "a.txt")
			must(t, os.WriteFile(p, []byte(want), 0o644))
			old := time.Now().Add(-time.Hour)
			must(t, os.Chtimes(p, old, old))
		}
		if _, body := do(t, e, "GET", "/a.txt", nil); string(body) != want {
			t.Fatalf("got %q, want %q", body, want)
		}
	}
}
