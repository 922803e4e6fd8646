package filtertest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/filtertest"
)

// TestLoadDefaultCache: Load with cacheDir "" keeps compiled code where
// the runtime keeps it by default (os.UserCacheDir()/sluice/wasm), as
// `sluice filter run` and `sluice serve` share it; a directory given is
// used instead.
func TestLoadDefaultCache(t *testing.T) {
	wasm, err := os.ReadFile("../testdata/set_header.wasm")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
	t.Setenv("HOME", home)
	base, err := os.UserCacheDir()
	if err != nil {
		t.Skip("no user cache directory here:", err)
	}
	given := t.TempDir()
	for _, c := range []struct{ arg, want string }{
		{"", filepath.Join(base, "sluice", "wasm")},
		{given, given},
	} {
		f, err := filtertest.Load(context.Background(), "mark", wasm, runtime.FilterOptions{}, nil, c.arg)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(c.want)
		if err != nil || len(entries) == 0 {
			t.Errorf("Load(cacheDir %q): nothing cached in %s (%v)", c.arg, c.want, err)
		}
	}
}
