package examples_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/sluicehq/sluice/config"
	_ "github.com/sluicehq/sluice/host/handlers" // the route blocks config decodes
)

// fence matches a fenced block opened by ```hcl, with its info string
// (the convention of config/docs_test.go).
var fence = regexp.MustCompile("(?ms)^```hcl([^\\n]*)\\n(.*?)^```")

// block is one ```hcl block of a README.
type block struct {
	readme string
	line   int    // of the opening fence
	info   string // "" or "fragment"
	src    []byte
}

func blocks(t *testing.T, readme string) []block {
	t.Helper()
	doc, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	var bs []block
	for _, m := range fence.FindAllSubmatchIndex(doc, -1) {
		bs = append(bs, block{
			readme: readme,
			line:   bytes.Count(doc[:m[0]], []byte("\n")) + 1,
			info:   strings.TrimSpace(string(doc[m[2]:m[3]])),
			src:    doc[m[4]:m[5]],
		})
	}
	return bs
}

// Every ```hcl block of these READMEs is parsed by config's
// TestMarkdownHCL, which reads every Markdown file of the repository; the
// tests here check what only an example has: its sluice.hcl, and the
// README's blocks against it.

// TestExampleConfigs loads each example's sluice.hcl, as `sluice
// validate` would (without compiling filters), and checks it is in
// canonical format.
func TestExampleConfigs(t *testing.T) {
	files, _ := filepath.Glob("*/sluice.hcl")
	if len(files) < 3 {
		t.Fatalf("found %d example configs", len(files))
	}
	for _, f := range files {
		_, srcs, diags := config.LoadFiles(f)
		if diags.HasErrors() {
			t.Errorf("%s:\n%s", f, config.FormatDiagnostics(diags, srcs))
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if formatted, err := config.Format(src); err != nil || !bytes.Equal(formatted, src) {
			t.Errorf("%s: not in canonical format (sluice fmt -w %s): %v", f, f, err)
		}
	}
}

// showsConfig lists the examples whose README shows blocks of sluice.hcl
// as they are (less comments): those blocks must not drift from the file.
var showsConfig = []string{"quickstart", "spa", "api-gateway"}

// TestReadmeMatchesConfig checks that each top-level block a README shows
// (filter "x", site "y", admin; or route "/p/" in a fragment) is the same
// as in the example's sluice.hcl, comments and blank lines aside.
func TestReadmeMatchesConfig(t *testing.T) {
	for _, dir := range showsConfig {
		conf := topBlocks(t, filepath.Join(dir, "sluice.hcl"), nil)
		compared := 0
		for _, b := range blocks(t, filepath.Join(dir, "README.md")) {
			for key, shown := range topBlocks(t, filepath.Join(dir, "README.md"), b.src) {
				want, ok := conf[key]
				if !ok {
					t.Errorf("%s/README.md:%d: shows %s, which sluice.hcl does not have", dir, b.line, key)
					continue
				}
				compared++
				if shown != want {
					t.Errorf("%s/README.md:%d: %s differs from sluice.hcl:\nREADME:\n%s\nsluice.hcl:\n%s", dir, b.line, key, shown, want)
				}
			}
		}
		if compared == 0 {
			t.Errorf("%s/README.md shows no block of sluice.hcl", dir)
		}
	}
}

// topBlocks returns the top-level blocks of a config, and the routes of
// its sites, keyed by type and labels, as text without comment lines,
// blank lines or indentation. src nil means the file's contents.
func topBlocks(t *testing.T, name string, src []byte) map[string]string {
	t.Helper()
	if src == nil {
		var err error
		if src, err = os.ReadFile(name); err != nil {
			t.Fatal(err)
		}
	}
	f, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("%s: %s", name, diags.Error())
	}
	out := map[string]string{}
	var add func(bs hclsyntax.Blocks, nested bool)
	add = func(bs hclsyntax.Blocks, nested bool) {
		for _, b := range bs {
			if nested && b.Type != "route" {
				continue
			}
			key := b.Type
			for _, l := range b.Labels {
				key += ` "` + l + `"`
			}
			var lines []string
			for _, line := range strings.Split(string(b.Range().SliceBytes(src)), "\n") {
				if s := strings.TrimSpace(line); s != "" && !strings.HasPrefix(s, "#") && !strings.HasPrefix(s, "//") {
					lines = append(lines, s)
				}
			}
			out[key] = strings.Join(lines, "\n")
			if b.Type == "site" {
				add(b.Body.Blocks, true)
			}
		}
	}
	add(f.Body.(*hclsyntax.Body).Blocks, false)
	return out
}
