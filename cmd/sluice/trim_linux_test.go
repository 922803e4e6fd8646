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
