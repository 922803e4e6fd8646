package config

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// DefaultListen is the address Default uses when listen is "".
const DefaultListen = "127.0.0.1:8080"

// Default returns the built-in config: one catch-all site "*" serving the
// directory root (default ".", made absolute) on listen (default
// DefaultListen), with directory listings when browse is set, no filters,
// no admin listener and all other settings at their defaults. It is the
// config of the equivalent file:
//
//	site "*" {
//	  listen = [LISTEN]
//	  route "/" {
//	    static {
//	      root   = ROOT
//	      browse = BROWSE
//	    }
//	  }
//	}
//
// Default does not check that root exists: the diagnostics of that file,
// like a missing root, are ignored here (serving reports them). It needs
// the static handler registered (host/handlers does).
func Default(root, listen string, browse bool) *Config {
	if root == "" {
		root = "."
	}
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	if listen == "" {
		listen = DefaultListen
	}
	src := fmt.Sprintf("site \"*\" {\n  listen = [%s]\n  route \"/\" {\n    static {\n      root   = %s\n      browse = %t\n    }\n  }\n}\n",
		hclString(listen), hclString(root), browse)
	file, diags := hclsyntax.ParseConfig([]byte(src), "default.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		panic("config: Default: " + diags.Error())
	}
	d := &decoder{dir: root, meta: map[*Site]*siteMeta{}}
	c := d.config(file.Body)
	if len(c.Sites) != 1 || len(c.Sites[0].Routes) != 1 || c.Sites[0].Routes[0].Kind != "static" {
		panic("config: Default needs the static handler registered (import host/handlers)")
	}
	return c
}

// hclString quotes s as an HCL string literal: escapes as Go's, and "${"
// and "%{" doubled so that they are not templates.
func hclString(s string) string {
	q := strconv.Quote(s)
	q = strings.ReplaceAll(q, "${", "$${")
	return strings.ReplaceAll(q, "%{", "%%{")
}
