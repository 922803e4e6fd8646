package main

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// version and commit are set at build time (make build):
//
//	go build -ldflags "-X main.version=v1.2.0 -X main.commit=1a2b3c4" ./cmd/sluice
//
// Without them, versionLine falls back to what Go records in the binary:
// the main module's version (go install …@v1.2.0) and the VCS revision
// (a plain go build in a checkout).
var (
	version = ""
	commit  = ""
)

// versionLine is what `sluice version` prints: "sluice v1.2.0 commit
// 1a2b3c4 go1.26.0 linux/amd64"; "dev" and "unknown" stand in for what
// is not known, and "-dirty" follows a commit built with local changes.
func versionLine() string {
	bi, _ := debug.ReadBuildInfo()
	v, c := resolveVersion(version, commit, bi)
	return "sluice " + v + " commit " + c + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
}

// resolveVersion picks the version and commit: the -ldflags values
// first, then the build info (nil when the binary has none).
func resolveVersion(version, commit string, bi *debug.BuildInfo) (string, string) {
	if bi != nil {
		if version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version
		}
		if commit == "" {
			var rev, modified string
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					modified = s.Value
				}
			}
			if len(rev) > 12 {
				rev = rev[:12]
			}
			if rev != "" && modified == "true" {
				rev += "-dirty"
			}
			commit = rev
		}
	}
	if version == "" {
		version = "dev"
	}
	if commit == "" {
		commit = "unknown"
	}
	return strings.TrimSpace(version), strings.TrimSpace(commit)
}
