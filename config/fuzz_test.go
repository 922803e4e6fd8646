package config

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse and the result to
// FormatDiagnostics: neither may panic, and a nil config must come with an
// error.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/valid/*.hcl")
	more, _ := filepath.Glob("testdata/invalid/*.hcl")
	for _, file := range append(files, more...) {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		name := "testdata/valid/fuzz.hcl"
		c, diags := Parse(name, src)
		out := FormatDiagnostics(diags, map[string][]byte{name: src})
		if c == nil && !diags.HasErrors() {
			t.Fatal("nil config without an error")
		}
		if c != nil && diags.HasErrors() {
			t.Fatalf("config with errors:\n%s", out)
		}
		if c != nil {
			if _, err := c.Redacted().JSON(); err != nil {
				t.Fatal(err)
			}
		}
		Format(src)
	})
}
