package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// rssFile returns the file-backed resident set of this process, in KiB.
func rssFile(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("no RssFile in /proc/self/status")
	return 0
}

// TestTrimStartup checks that trimStartup drops the executable's
// read-only pages from the resident set, and that the process goes on.
func TestTrimStartup(t *testing.T) {
	before := rssFile(t)
	trimStartup()
	after := rssFile(t)
	if after >= before {
		t.Errorf("file-backed RSS %d KiB after trimStartup, was %d KiB", after, before)
	}
	t.Logf("file-backed RSS %d KiB -> %d KiB", before, after)
	if s := strconv.Itoa(42); s != "42" { // code and constants come back
		t.Fatal(s)
	}
}

// TestTrimmable: only mappings that hold the file's own bytes are
// dropped; in a PIE build (RELRO) the read-only data the loader
// relocated is kept, or pointers in it would revert to the file's.
func TestTrimmable(t *testing.T) {
	for _, c := range []struct {
		perms string
		relro bool
		want  bool
	}{
		{"r-xp", false, true},
		{"r--p", false, true},
		{"rw-p", false, false},
		{"r-xp", true, true},
		{"r--p", true, false},
		{"rw-p", true, false},
	} {
		if got := trimmable(c.perms, c.relro); got != c.want {
			t.Errorf("trimmable(%q, relro=%v) = %v, want %v", c.perms, c.relro, got, c.want)
		}
	}
}
