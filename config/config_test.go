package config

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with the file at path, or rewrites it under -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./config -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test ./config -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// attr is the field of a registered block that holds its attribute
// name (the handler packages cannot be imported here: they import config).
func attr(b Block, name string) reflect.Value {
	v := reflect.ValueOf(b).Elem()
	for _, f := range schemaOf(v.Type()) {
		if f.name == name && !f.rng {
			return v.Field(f.index)
		}
	}
	panic(fmt.Sprintf("%T has no attribute %q", b, name))
}

// testEnv sets the environment the testdata configs expect.
func testEnv(t *testing.T) {
	t.Setenv("API_KEY", "sketch-secret-key")
	t.Setenv("SLUICE_TEST_SET", "from-env")
	t.Setenv("SLUICE_TEST_API_KEY", "env-secret-api-key")
	t.Setenv("SLUICE_TEST_ADMIN_SECRET", "env-secret-admin-token")
	t.Setenv("SLUICE_TEST_UPSTREAM_HOST", "env-secret-host.internal")
	for _, name := range []string{"SLUICE_TEST_UNSET", "SLUICE_TEST_UNSET_KEY", "SLUICE_TEST_ADMIN_TOKEN"} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
}

// machineIndependent replaces the absolute testdata directory with
// "testdata".
func machineIndependent(t *testing.T, b []byte) []byte {
	abs, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return bytes.ReplaceAll(b, []byte(abs), []byte("testdata"))
}

func TestValid(t *testing.T) {
	testEnv(t)
	files, _ := filepath.Glob("testdata/valid/*.hcl")
	if len(files) < 8 {
		t.Fatalf("want at least 8 valid configs, have %d", len(files))
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".hcl"), func(t *testing.T) {
			c, src, diags := LoadFiles(file)
			if diags.HasErrors() || c == nil {
				t.Fatalf("want no errors, got:\n%s", FormatDiagnostics(diags, src))
			}
			if len(diags) > 0 {
				t.Errorf("unexpected warnings:\n%s", FormatDiagnostics(diags, src))
			}
			j, err := c.Redacted().JSON()
			if err != nil {
				t.Fatal(err)
			}
			golden(t, strings.TrimSuffix(file, ".hcl")+".golden.json", machineIndependent(t, j))

			// The same bytes through Parse give the same config.
			c2, diags := Parse(file, src[file])
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			j2, _ := c2.Redacted().JSON()
			if !bytes.Equal(j, j2) {
				t.Error("Parse and Load disagree")
			}
		})
	}
}

func TestInvalid(t *testing.T) {
	testEnv(t)
	files, _ := filepath.Glob("testdata/invalid/*.hcl")
	if len(files) < 30 {
		t.Fatalf("want at least 30 invalid configs, have %d", len(files))
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".hcl"), func(t *testing.T) {
			c, src, diags := LoadFiles(file)
			if c != nil {
				t.Error("want a nil config with errors")
			}
			if !diags.HasErrors() {
				t.Fatal("want errors, got none")
			}
			out := FormatDiagnostics(diags, src)
			for _, d := range diags {
				if d.Subject == nil {
					t.Errorf("diagnostic without a range: %s", d.Summary)
				}
			}
			golden(t, strings.TrimSuffix(file, ".hcl")+".golden", machineIndependent(t, []byte(out)))
		})
	}
}

// TestMultipleErrors checks that problems are accumulated, not first-only.
func TestMultipleErrors(t *testing.T) {
	testEnv(t)
	_, diags := Load("testdata/invalid/multiple_errors.hcl")
	if n := len(diags.Errs()); n < 5 {
		t.Errorf("want every problem reported, got %d:\n%v", n, diags)
	}
}

func TestLoadMissingFile(t *testing.T) {
	c, files, diags := LoadFiles("testdata/does-not-exist.hcl")
	if c != nil || !diags.HasErrors() {
		t.Fatal("want an error")
	}
	out := FormatDiagnostics(diags, files)
	if !strings.Contains(out, "testdata/does-not-exist.hcl: no such file or directory") {
		t.Errorf("got %q", out)
	}
}

func TestFileIsAbsolute(t *testing.T) {
	testEnv(t)
	c, diags := Load("testdata/valid/minimal.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if !filepath.IsAbs(c.File) || !filepath.IsAbs(attr(c.Sites[0].Routes[0].Handler(), "root").String()) {
		t.Errorf("want absolute paths, got %q and %q", c.File, attr(c.Sites[0].Routes[0].Handler(), "root").String())
	}
	if c.Listener(":8080") == nil || c.Listener(":8080").DefaultSite != "*" {
		t.Errorf("want the implicit :8080 listener with default site *")
	}
}
