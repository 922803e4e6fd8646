package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTrimspaceJSONDecode: the helper functions for keys and filter
// configs kept in files.
func TestTrimspaceJSONDecode(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "key"), []byte("s3cret\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "users.json"), []byte(`{"alice": "hash"}`), 0o600)
	os.WriteFile(filepath.Join(dir, "f.wasm"), []byte("\x00asm\x01\x00\x00\x00"), 0o600)
	src := `
filter "f" {
  module = "f.wasm"
  config = { key = trimspace(file("key")), users = jsondecode(file("users.json")) }
}
site "*" {
  route "/" {
    filters = ["f"]
    respond { body = "ok" }
  }
}
`
	cfg, diags := Parse(filepath.Join(dir, "sluice.hcl"), []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if got, want := string(cfg.Filters[0].Config), `{"key":"s3cret","users":{"alice":"hash"}}`; got != want {
		t.Fatalf("config %s, want %s", got, want)
	}
}
