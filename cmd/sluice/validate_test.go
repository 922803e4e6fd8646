package main

import (
	"bytes"
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
