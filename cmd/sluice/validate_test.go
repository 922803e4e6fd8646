package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateGoldens runs `sluice validate` on every config fixture: the
// invalid ones must print exactly their golden diagnostics and exit 1, the
// valid ones exit 0.
func TestValidateGoldens(t *testing.T) {
	t.Chdir("../../config")
	t.Setenv("API_KEY", "test-key")
	invalid, _ := filepath.Glob("testdata/invalid/*.hcl")
	valid, _ := filepath.Glob("testdata/valid/*.hcl")
	if len(invalid) < 25 || len(valid) < 5 {
		t.Fatalf("too few fixtures: %d invalid, %d valid", len(invalid), len(valid))
	}
	for _, f := range invalid {
		t.Run(f, func(t *testing.T) {
			want, err := os.ReadFile(strings.TrimSuffix(f, ".hcl") + ".golden")
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if rc := validate([]string{"-c", f}, &out); rc != 1 {
				t.Errorf("exit %d, want 1", rc)
			}
			if out.String() != string(want) {
				t.Errorf("output differs from golden:\n--- got\n%s--- want\n%s", out.String(), want)
			}
		})
	}
	for _, f := range valid {
		t.Run(f, func(t *testing.T) {
			var out bytes.Buffer
			if rc := validate([]string{"-c", f}, &out); rc != 0 {
				t.Errorf("exit %d, want 0:\n%s", rc, out.String())
			}
		})
	}
}

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestValidateSetup runs `sluice validate` on configs that parse but that
// fail when they are built (testdata/validate): a filter that rejects its
// config or does not compile, a `ca` that is not PEM, a key that is not
// its certificate's. Validate builds every filter and handler as serve
// does, starting nothing, and must print exactly the golden diagnostics
// (at the attribute at fault) and exit 1. -update rewrites the goldens.
func TestValidateSetup(t *testing.T) {
	files, _ := filepath.Glob("testdata/validate/*.hcl")
	if len(files) < 2 {
		t.Fatalf("too few fixtures: %d", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			var out bytes.Buffer
			if rc := validate([]string{"-c", f}, &out); rc != 1 {
				t.Errorf("exit %d, want 1", rc)
			}
			golden := strings.TrimSuffix(f, ".hcl") + ".golden"
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./cmd/sluice -run TestValidateSetup -update to create it)", err)
			}
			if out.String() != string(want) {
				t.Errorf("output differs from golden (-update accepts it):\n--- got\n%s--- want\n%s", out.String(), want)
			}
		})
	}
}

// TestReadmeDiagnostic: the diagnostic the README shows is what `sluice
// validate` prints for testdata/readme/sluice.hcl, byte for byte.
func TestReadmeDiagnostic(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const intro = "A bad config is refused with every\nproblem at once:\n\n```text\n"
	i := bytes.Index(readme, []byte(intro))
	if i < 0 {
		t.Fatal("README.md: no sample diagnostic after \"A bad config is refused\"")
	}
	shown := readme[i+len(intro):]
	shown = shown[:bytes.Index(shown, []byte("```"))]
	const cmd = "$ sluice validate -c sluice.hcl\n"
	if !bytes.HasPrefix(shown, []byte(cmd)) {
		t.Fatalf("README.md: the sample starts %q, want %q", shown[:min(len(shown), len(cmd))], cmd)
	}
	t.Chdir("testdata/readme")
	var out bytes.Buffer
	if rc := validate([]string{"-c", "sluice.hcl"}, &out); rc != 1 {
		t.Errorf("exit %d, want 1", rc)
	}
	if got, want := out.String(), string(shown[len(cmd):]); got != want {
		t.Errorf("README.md shows:\n%s\nsluice validate prints:\n%s", want, got)
	}
}
