package static

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange/exchangetest"
)

// TestOpenFileCache serves a file held in memory and one too large for
// it, whole and by range, concurrently, through every engine; the fast
// engine sends the large one from the cached descriptor. A changed file
// is served with its new bytes and its old descriptor closed; closing
// the handler closes the rest.
func TestOpenFileCache(t *testing.T) {
	mem := bytes.Repeat([]byte("0123456789abcdef"), 111<<10/16) // 111 KiB, in memory too
	big := bytes.Repeat([]byte("fedcba9876543210"), 300<<10/16) // above MemCacheMaxFile
	dir := writeTree(t, map[string]string{"mem.bin": string(mem), "big.bin": string(big)})
	base := openFiles.Load()
	h := newHandler(t, Options{Root: dir})
	engines := exchangetest.Engines(t, h)
	get := func(e exchangetest.Engine, path, rng string) (int, []byte) {
		req, _ := http.NewRequest("GET", e.URL+path, nil)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		resp, err := e.Client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", e.Name, path, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s %s: %v", e.Name, path, err)
		}
		return resp.StatusCode, b
	}
	for _, e := range engines {
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				for _, c := range []struct {
					path, rng string
					want      []byte
				}{
					{"/mem.bin", "", mem},
					{"/big.bin", "", big},
					{"/big.bin", "bytes=1000-99999", big[1000:100000]},
					{"/mem.bin", "bytes=" + strconv.Itoa(i) + "-", mem[i:]},
				} {
					status, b := get(e, c.path, c.rng)
					if want := map[bool]int{true: 206, false: 200}[c.rng != ""]; status != want || !bytes.Equal(b, c.want) {
						t.Errorf("%s %s %s: %d, %d bytes", e.Name, c.path, c.rng, status, len(b))
					}
				}
			})
		}
		wg.Wait()
	}
	if n := openFiles.Load() - base; n != 1 {
		t.Errorf("%d descriptors cached, want 1", n)
	}
	if e, _ := h.entryFor("/mem.bin"); e.file.Load() != nil {
		t.Error("a descriptor cached for a file held in memory")
	}
	e, _ := h.entryFor("/big.bin")
	old := e.file.Load()
	if old == nil {
		t.Fatal("no cached descriptor for big.bin")
	}

	// A changed file: the entry goes, its descriptor with it.
	big2 := bytes.Repeat([]byte("X"), len(big)+5)
	p := filepath.Join(dir, "big.bin")
	if err := os.WriteFile(p, big2, 0o644); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Minute)
	if err := os.Chtimes(p, past, past); err != nil {
		t.Fatal(err)
	}
	settle(t, h)
	for _, e := range engines {
		if status, b := get(e, "/big.bin", ""); status != 200 || !bytes.Equal(b, big2) {
			t.Errorf("%s: after the change: %d, %d bytes", e.Name, status, len(b))
		}
	}
	if old.refs.Load() != 0 {
		t.Errorf("old descriptor still has %d references", old.refs.Load())
	}
	if _, err := old.f.Stat(); err == nil {
		t.Error("old descriptor still open")
	}
	h.Close()
	if n := openFiles.Load() - base; n != 0 {
		t.Errorf("%d descriptors open after Close", n)
	}
}

// TestOpenFileBound checks that no more than MaxOpenFiles descriptors
// are cached: past it, files are opened per request, as without a cache.
func TestOpenFileBound(t *testing.T) {
	body := bytes.Repeat([]byte("z"), 5000)
	dir := writeTree(t, map[string]string{"a": string(body), "b": string(body)})
	h := newHandler(t, Options{Root: dir, MemCacheMaxFile: -1})
	base := openFiles.Load()
	openFiles.Add(MaxOpenFiles - base - 1) // room for one more
	defer openFiles.Add(-(MaxOpenFiles - base - 1))
	var fast exchangetest.Engine
	for _, e := range exchangetest.Engines(t, h) {
		if e.Name == "fast" {
			fast = e
		}
	}
	for _, name := range []string{"/a", "/b", "/a", "/b"} {
		resp, err := fast.Client.Get(fast.URL + name)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Equal(b, body) {
			t.Fatalf("%s: %d, %d bytes", name, resp.StatusCode, len(b))
		}
	}
	if n := openFiles.Load(); n != MaxOpenFiles {
		t.Errorf("%d descriptors cached, want the bound %d", n, MaxOpenFiles)
	}
	ea, _ := h.entryFor("/a")
	eb, _ := h.entryFor("/b")
	if (ea.file.Load() == nil) == (eb.file.Load() == nil) {
		t.Errorf("want exactly one of a, b with a cached descriptor")
	}
}
