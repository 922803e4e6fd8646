package filters_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// guests lists the filter folders: those holding a build.sh.
func guests(t testing.TB) []string {
	dirs, err := filepath.Glob("*/build.sh")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no */build.sh: %v", err)
	}
	for i, d := range dirs {
		dirs[i] = filepath.Dir(d)
	}
	return dirs
}

// TestWasmUpToDate rebuilds every filter in a scratch copy of its folder
// and compares the result with the committed .wasm. A build.sh that exits
// 3 says its toolchain is missing: the test skips with its message.
func TestWasmUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not rebuilding the guests")
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range guests(t) {
		t.Run(name, func(t *testing.T) {
			CheckFresh(t, repo, filepath.Join("filters", name), name+".wasm")
		})
	}
}

// CheckFresh copies repo/dir into a scratch tree whose sdk/ points at the
// real one, runs build.sh there and compares out with the committed file.
func CheckFresh(t *testing.T, repo, dir, out string) {
	scratch := t.TempDir()
	if err := os.Symlink(filepath.Join(repo, "sdk"), filepath.Join(scratch, "sdk")); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(scratch, dir)
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(repo, dir))); err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join(repo, dir, out))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "./build.sh")
	cmd.Dir = dst
	msg, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		t.Skipf("%s: toolchain missing: %s", dir, strings.TrimSpace(string(msg)))
	}
	if err != nil {
		t.Fatalf("%s/build.sh: %v\n%s", dir, err, msg)
	}
	built, err := os.ReadFile(filepath.Join(dst, out))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(built, committed) {
		t.Errorf("%s/%s is out of date (%d bytes committed, %d built): run make wasm and commit", dir, out, len(committed), len(built))
	}
}
