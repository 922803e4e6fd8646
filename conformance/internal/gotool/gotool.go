// Package gotool builds the Go programs the conformance suites run
// against sluice (h2spec, Pebble) from the Go module proxy, pinned to a
// version, outside sluice's own module: they never become dependencies.
package gotool

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// Install builds pkg at version (`go install pkg@version`) into a
// temporary directory and returns the binary's path. When it cannot be
// built (no network, no module proxy), the test is skipped and says why.
func Install(t testing.TB, pkg, version string) string {
	t.Helper()
	bin := t.TempDir()
	cmd := exec.Command("go", "install", pkg+"@"+version)
	cmd.Dir = bin // outside sluice's module: its go.mod plays no part
	cmd.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Skipf("cannot build %s@%s, skipping this suite: %v\n%s", pkg, version, err, tail(string(out), 2000))
	}
	return filepath.Join(bin, path.Base(pkg))
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
