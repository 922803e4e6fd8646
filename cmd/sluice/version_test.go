package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestResolveVersion(t *testing.T) {
	vcs := func(rev, modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}}
	}
	withMain := func(bi *debug.BuildInfo, v string) *debug.BuildInfo { bi.Main.Version = v; return bi }
	const rev = "545817c0123456789abcdef0123456789abcdef0"
	for _, c := range []struct {
		name, version, commit string
		bi                    *debug.BuildInfo
		wantV, wantC          string
	}{
		{"no build info", "", "", nil, "dev", "unknown"},
		{"ldflags win", "v1.2.0", "1a2b3c4", withMain(vcs(rev, "true"), "v0.9.0"), "v1.2.0", "1a2b3c4"},
		{"plain go build", "", "", withMain(vcs(rev, "false"), "(devel)"), "dev", "545817c01234"},
		{"plain go build, local changes", "", "", vcs(rev, "true"), "dev", "545817c01234-dirty"},
		{"go install at a version", "", "", withMain(&debug.BuildInfo{}, "v1.3.0"), "v1.3.0", "unknown"},
		{"version from ldflags only", "v1.2.0", "", vcs(rev, "false"), "v1.2.0", "545817c01234"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, cm := resolveVersion(c.version, c.commit, c.bi)
			if v != c.wantV || cm != c.wantC {
				t.Errorf("got %q %q, want %q %q", v, cm, c.wantV, c.wantC)
			}
		})
	}
}

// TestVersionCommand builds sluice twice, as a plain `go build` in this
// checkout and as `make build` does, and checks what `sluice version`
// prints: the version, the commit and the Go version.
func TestVersionCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skip("not a git checkout:", err)
	}
	dir := t.TempDir()
	run := func(name string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	tail := " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH

	// go build stamps the revision only where .git is a directory: not
	// in a `git worktree` checkout, where it is a file.
	top, _ := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if fi, err := os.Stat(filepath.Join(strings.TrimSpace(string(top)), ".git")); err == nil && fi.IsDir() {
		plain := filepath.Join(dir, "plain")
		// -buildvcs=true is go build's default; GOFLAGS may turn it off.
		run(goTool, "build", "-buildvcs=true", "-o", plain, ".")
		got := run(plain, "version")
		// The version is "dev", or the pseudo-version go build derives
		// from the revision ("v0.0.0-20261201085258-e877183fa9ee").
		want := " commit " + string(head[:12])
		if !strings.HasPrefix(got, "sluice ") || !strings.Contains(got, want) || !strings.HasSuffix(got, tail) {
			t.Errorf("plain go build: %q, want sluice VERSION%s[-dirty]%s", got, want, tail)
		}
	} else {
		t.Log("a git worktree: go build records no revision; plain build not checked")
	}

	stamped := filepath.Join(dir, "stamped")
	run(goTool, "build", "-ldflags", "-X main.version=v9.8.7 -X main.commit=abc1234", "-o", stamped, ".")
	if got, want := run(stamped, "version"), "sluice v9.8.7 commit abc1234"+tail; got != want {
		t.Errorf("with -ldflags: %q, want %q", got, want)
	}
}
