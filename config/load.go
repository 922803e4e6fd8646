package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// Load reads, parses, decodes, defaults and validates the config file at
// path. On any problem it returns nil and every problem found, as
// diagnostics whose ranges name path as given.
func Load(path string) (*Config, hcl.Diagnostics) {
	c, _, diags := LoadFiles(path)
	return c, diags
}

// LoadFiles is Load that also returns the source of the files read, keyed
// by the file names used in the diagnostics, for FormatDiagnostics. The
// map is returned even when the config is not.
func LoadFiles(path string) (*Config, map[string][]byte, hcl.Diagnostics) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, map[string][]byte{}, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read config file",
			Detail:   fmt.Sprintf("%s: %s.", path, ioReason(err)),
		}}
	}
	files := map[string][]byte{path: src}
	c, diags := Parse(path, src)
	return c, files, diags
}

// Parse is Load for a file already read: filename names the file in
// diagnostics and relative paths in the config are resolved against its
// directory.
func Parse(filename string, src []byte) (*Config, hcl.Diagnostics) {
	abs, err := filepath.Abs(filename)
	if err != nil {
		abs = filename
	}
	file, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	if diags := checkNumbers(file.Body.(*hclsyntax.Body)); diags.HasErrors() {
		return nil, diags
	}
	d := &decoder{dir: filepath.Dir(abs), diags: diags, meta: map[*Site]*siteMeta{}}
	d.ctx = &hcl.EvalContext{Functions: map[string]function.Function{
		"env":        envFunc,
		"file":       fileFunc(d.dir),
		"trimspace":  stdlib.TrimSpaceFunc,
		"jsondecode": stdlib.JSONDecodeFunc,
	}}
	c := d.config(file.Body)
	c.File = abs
	c.secrets = d.secrets
	sortDiagnostics(d.diags)
	if d.diags.HasErrors() {
		return nil, d.diags
	}
	return c, d.diags
}

// secret is the cty mark on what env() and file() return. Marks survive
// templates and function calls ("Bearer ${env("T")}",
// trimspace(file("key"))), so body.value knows which evaluated values
// hold one and records them in decoder.secrets for Redacted.
const secret = mark("secret")

type mark string

// envFunc is env(NAME) and env(NAME, DEFAULT): the value of an environment
// variable, marked secret (the default too); unset without a default is an
// error.
var envFunc = function.New(&function.Spec{
	Description: "Returns the value of an environment variable, or the default when it is unset.",
	Params:      []function.Parameter{{Name: "name", Type: cty.String}},
	VarParam:    &function.Parameter{Name: "default", Type: cty.String},
	Type:        function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if len(args) > 2 {
			return cty.NilVal, function.NewArgErrorf(2, "env takes a name and at most one default")
		}
		name := args[0].AsString()
		if v, ok := os.LookupEnv(name); ok {
			return cty.StringVal(v).Mark(secret), nil
		}
		if len(args) == 2 {
			return args[1].Mark(secret), nil
		}
		return cty.NilVal, function.NewArgErrorf(0, "environment variable %q is not set (give env a second argument for a default)", name)
	},
})

// fileFunc is file(PATH): the contents of a file, marked secret, PATH
// relative to dir.
func fileFunc(dir string) function.Function {
	return function.New(&function.Spec{
		Description: "Returns the contents of a file, its path relative to the config file's directory.",
		Params:      []function.Parameter{{Name: "path", Type: cty.String}},
		Type:        function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			p := args[0].AsString()
			full := p
			if !filepath.IsAbs(p) {
				full = filepath.Join(dir, p)
			}
			b, err := os.ReadFile(full)
			if err != nil {
				return cty.NilVal, function.NewArgErrorf(0, "cannot read %q: %s", p, ioReason(err))
			}
			return cty.StringVal(string(b)).Mark(secret), nil
		},
	})
}

// ioReason describes err without the path it names, so that messages stay
// the same on every machine.
func ioReason(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file or directory"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// sortDiagnostics orders diagnostics by file position, so that they read
// top to bottom; those without a range come first.
func sortDiagnostics(diags hcl.Diagnostics) {
	slices.SortStableFunc(diags, func(a, b *hcl.Diagnostic) int {
		switch {
		case a.Subject == nil && b.Subject == nil:
			return 0
		case a.Subject == nil:
			return -1
		case b.Subject == nil:
			return 1
		}
		if c := strings.Compare(a.Subject.Filename, b.Subject.Filename); c != 0 {
			return c
		}
		return a.Subject.Start.Byte - b.Subject.Start.Byte
	})
}

// maxExponent bounds the binary exponent of number literals (about 1e±1000).
// Far larger ones are no setting's value, and printing them in full (as
// converting a number to a string does) would take minutes.
const maxExponent = 3400

// checkNumbers reports number literals too large or too small to be
// evaluated safely.
func checkNumbers(body *hclsyntax.Body) hcl.Diagnostics {
	var diags hcl.Diagnostics
	hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
		lit, ok := n.(*hclsyntax.LiteralValueExpr)
		if !ok || lit.Val.Type() != cty.Number || !lit.Val.IsKnown() || lit.Val.IsNull() {
			return nil
		}
		if e := lit.Val.AsBigFloat().MantExp(nil); e > maxExponent || e < -maxExponent {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Number out of range",
				Detail:   "This number is too large or too small for any setting.",
				Subject:  lit.SrcRange.Ptr(),
			})
		}
		return nil
	})
	return diags
}
