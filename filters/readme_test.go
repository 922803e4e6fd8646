package filters_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/sluicehq/sluice/config"
)

// TestReadmeHCL parses every ```hcl block of every filter README, with
// the module paths resolved in the filter's folder.
func TestReadmeHCL(t *testing.T) {
	block := regexp.MustCompile("(?s)```hcl\n(.*?)```")
	env := regexp.MustCompile(`env\("([A-Za-z_][A-Za-z0-9_]*)"\)`)
	for _, name := range guests(t) {
		src, err := os.ReadFile(filepath.Join(name, "README.md"))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		blocks := block.FindAllSubmatch(src, -1)
		if len(blocks) == 0 {
			t.Errorf("%s/README.md: no hcl block", name)
		}
		for i, m := range blocks {
			for _, e := range env.FindAllSubmatch(m[1], -1) {
				t.Setenv(string(e[1]), "test-value")
			}
			file := filepath.Join(name, fmt.Sprintf("README.md#hcl%d", i+1))
			if _, diags := config.Parse(file, withSite(m[1])); diags.HasErrors() {
				t.Errorf("%s: %s", file, diags.Error())
			}
		}
	}
}

// withSite completes a snippet that shows only filter blocks with a
// minimal site, which a config needs.
func withSite(src []byte) []byte {
	if regexp.MustCompile(`(?m)^site `).Match(src) {
		return src
	}
	return append(append([]byte{}, src...), "\nsite \"*\" {\n  route \"/\" {\n    respond {\n      status = 200\n    }\n  }\n}\n"...)
}
