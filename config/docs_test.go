package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// fence matches a fenced block opened by ```hcl, with its info string.
var fence = regexp.MustCompile("(?ms)^```hcl([^\\n]*)\\n(.*?)^```")

// TestConfigMD loads every ```hcl block of CONFIG.md as a whole config, in a
// directory holding the files the examples name, so the reference cannot
// rot. Blocks marked ```hcl fragment are only checked for syntax.
func TestConfigMD(t *testing.T) {
	doc, err := os.ReadFile("CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, content := range map[string]string{
		"public/index.html":    "<h1>hi</h1>\n",
		"public/404.html":      "<h1>not found</h1>\n",
		"cert.pem":             "placeholder\n",
		"key.pem":              "placeholder\n",
		"banner.txt":           "hello\n",
		"filters/keyauth.wasm": "\x00asm\x01\x00\x00\x00",
		"filters/headers.wasm": "\x00asm\x01\x00\x00\x00",
		"logs/.keep":           "",
	} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("API_KEY", "doc-key")
	t.Setenv("SLUICE_ADMIN_TOKEN", "doc-token")

	blocks := fence.FindAllSubmatch(doc, -1)
	if len(blocks) < 8 {
		t.Fatalf("found %d hcl blocks in CONFIG.md, want the examples", len(blocks))
	}
	for i, m := range blocks {
		info, src := strings.TrimSpace(string(m[1])), m[2]
		line := strings.Count(string(doc[:strings.Index(string(doc), string(m[0]))]), "\n") + 1
		name := filepath.Join(dir, "example.hcl")
		switch info {
		case "fragment":
			if _, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos); diags.HasErrors() {
				t.Errorf("CONFIG.md:%d: fragment %d does not parse:\n%s", line, i, FormatDiagnostics(diags, map[string][]byte{name: src}))
			}
		case "":
			if _, diags := Parse(name, src); diags.HasErrors() {
				t.Errorf("CONFIG.md:%d: example %d is not a valid config:\n%s", line, i, FormatDiagnostics(diags, map[string][]byte{name: src}))
			}
		default:
			t.Errorf("CONFIG.md:%d: unknown info string %q (use ```hcl or ```hcl fragment)", line, info)
		}
		if formatted, err := Format(src); err == nil && string(formatted) != string(src) {
			t.Errorf("CONFIG.md:%d: example %d is not in canonical format (sluice fmt):\n%s", line, i, formatted)
		}
	}
}
