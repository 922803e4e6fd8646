// Package gotool builds the Go programs the conformance suites run
// against sluice (h2spec, Pebble) from the Go module proxy, pinned to a
// version, outside sluice's own module: they never become dependencies;
// and sluice itself (Sluice).
package gotool

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// Sluice builds this checkout's cmd/sluice into the file dst, within
// five minutes: the binary the suites run as a black box.
func Sluice(dst string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", dst, "github.com/sluicehq/sluice/cmd/sluice").CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build ./cmd/sluice: %v\n%s", err, tail(string(out), 4000))
	}
	return nil
}
