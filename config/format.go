package config

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

// Format returns src in canonical HCL layout (hclwrite.Format: aligned
// equals signs, two-space indents). It does not check the schema. When src
// does not parse, the error is the hcl.Diagnostics, naming the file
// "<input>"; FormatFile names it.
func Format(src []byte) ([]byte, error) {
	return FormatFile("<input>", src)
}

// FormatFile is Format with filename used in diagnostics.
func FormatFile(filename string, src []byte) ([]byte, error) {
	if _, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos); diags.HasErrors() {
		return nil, diags
	}
	return hclwrite.Format(src), nil
}
