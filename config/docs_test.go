package config

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// The docs tests read every Markdown file of the repository, as CoreDNS's
// test/readme_test.go reads every plugin README, so that no document can
// show a config sluice would refuse, or an attribute it does not have.

// fence matches a fenced block opened by ```hcl, with its info string.
var fence = regexp.MustCompile("(?ms)^```hcl([^\\n]*)\\n(.*?)^```")

// repoRoot is the folder of the module's go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("no go.mod above config/: %v", err)
	}
	return dir
}

// markdownFiles lists the repository's Markdown files, relative to root:
// `git ls-files '*.md'`, or, where git or its metadata is missing (a
// source archive), every .md below root outside hidden, node_modules and
// target folders.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--", "*.md")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil && len(out) > 0 {
		var files []string
		for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
			if _, err := os.Stat(filepath.Join(root, f)); err == nil { // not deleted in the work tree
				files = append(files, f)
			}
		}
		return files
	}
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "target") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			rel, _ := filepath.Rel(root, path)
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

// mdBlock is one ```hcl block of a Markdown file.
type mdBlock struct {
	file string // relative to the repository root
	line int    // of the opening fence
	info string // "" or "fragment"
	src  []byte
}

func hclBlocks(t *testing.T, root, file string) []mdBlock {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	var bs []mdBlock
	for _, m := range fence.FindAllSubmatchIndex(doc, -1) {
		bs = append(bs, mdBlock{
			file: file,
			line: bytes.Count(doc[:m[0]], []byte("\n")) + 1,
			info: strings.TrimSpace(string(doc[m[2]:m[3]])),
			src:  doc[m[4]:m[5]],
		})
	}
	return bs
}

// fixtureDir is a folder holding the files the reference's examples name
// (public/, cert.pem, filters/keyauth.wasm, …).
func fixtureDir(t *testing.T) string {
	t.Helper()
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
	return dir
}

var envCall = regexp.MustCompile(`env\("([A-Za-z_][A-Za-z0-9_]*)"\)`)

// withSite completes a snippet into a config: one that shows only routes
// (a handler README's) is put in a site; one that shows only filter (or
// admin, telemetry) blocks gets a minimal site, which a config needs.
func withSite(src []byte) []byte {
	if regexp.MustCompile(`(?m)^site `).Match(src) {
		return src
	}
	if !regexp.MustCompile(`(?m)^[a-z]`).Match(regexp.MustCompile(`(?m)^route [^\n]*\n(?:[ #].*\n|\n)*?\}\n?`).ReplaceAll(src, nil)) {
		return append(append([]byte("site \"*\" {\n"), src...), "\n}\n"...)
	}
	return append(append([]byte{}, src...), "\nsite \"*\" {\n  route \"/\" {\n    respond {\n      status = 200\n    }\n  }\n}\n"...)
}

// parseDoc loads a block as a whole config: first in the Markdown file's
// folder (an example's README names the example's files), else in the
// fixture folder (the reference names public/, cert.pem, …). It returns
// the diagnostics of the first try when both fail.
func parseDoc(root, fixtures string, b mdBlock) (hcl.Diagnostics, map[string][]byte) {
	src := withSite(b.src)
	for _, m := range envCall.FindAllSubmatch(src, -1) {
		if os.Getenv(string(m[1])) == "" {
			os.Setenv(string(m[1]), "doc-value") // restored by the caller's t.Setenv
		}
	}
	name := filepath.Join(root, filepath.Dir(b.file), filepath.Base(b.file)+".hcl")
	_, diags := Parse(name, src)
	if !diags.HasErrors() {
		return nil, nil
	}
	if _, d2 := Parse(filepath.Join(fixtures, "example.hcl"), src); !d2.HasErrors() {
		return nil, nil
	}
	return diags, map[string][]byte{name: src}
}

// TestMarkdownHCL parses every ```hcl block of every Markdown file of the
// repository. A block is loaded as a whole config (a block with filters
// but no site gets a minimal site); one marked ```hcl fragment (a route,
// part of a site) is only checked for syntax. Every block must be in
// canonical format (sluice fmt).
func TestMarkdownHCL(t *testing.T) {
	root := repoRoot(t)
	files := markdownFiles(t, root)
	if len(files) < 20 {
		t.Fatalf("found %d Markdown files, want every one of the repository", len(files))
	}
	fixtures := fixtureDir(t)
	for _, k := range []string{"API_KEY", "SLUICE_ADMIN_TOKEN"} {
		t.Setenv(k, "doc-value")
	}
	n, perFile := 0, map[string]int{}
	for _, f := range files {
		for _, b := range hclBlocks(t, root, f) {
			n++
			perFile[f]++
			for _, m := range envCall.FindAllSubmatch(b.src, -1) {
				t.Setenv(string(m[1]), "doc-value")
			}
			switch b.info {
			case "fragment":
				if _, diags := hclsyntax.ParseConfig(b.src, f, hcl.InitialPos); diags.HasErrors() {
					t.Errorf("%s:%d: fragment does not parse:\n%s", f, b.line, FormatDiagnostics(diags, map[string][]byte{f: b.src}))
				}
			case "":
				if diags, srcs := parseDoc(root, fixtures, b); diags.HasErrors() {
					t.Errorf("%s:%d: not a valid config:\n%s", f, b.line, FormatDiagnostics(diags, srcs))
				}
			default:
				t.Errorf("%s:%d: unknown info string %q (use ```hcl or ```hcl fragment)", f, b.line, b.info)
			}
			if formatted, err := Format(b.src); err == nil && !bytes.Equal(formatted, b.src) {
				t.Errorf("%s:%d: not in canonical format (sluice fmt):\n%s", f, b.line, formatted)
			}
		}
	}
	// The reference, the README, and each filter's README (how to use the
	// filter) must show configs.
	must := []string{"config/CONFIG.md", "README.md", "examples/quickstart/README.md"}
	for _, f := range files {
		if ok, _ := filepath.Match("filters/*/README.md", filepath.ToSlash(f)); ok {
			must = append(must, f)
		}
	}
	for _, f := range must {
		if perFile[f] == 0 {
			t.Errorf("%s: no ```hcl block read", f)
		}
	}
	if perFile["config/CONFIG.md"] < 8 {
		t.Errorf("config/CONFIG.md: %d hcl blocks, want the examples", perFile["config/CONFIG.md"])
	}
	t.Logf("%d hcl blocks in %d Markdown files", n, len(files))
}

// schemaNames learns every attribute and block name of the schema by
// decoding the valid fixtures (which use every block) and the reference's
// examples, and returns them by block ("site", "proxy", "tls", … and ""
// for the top level; blocks of one name, like the site's and the
// upstream's tls, are merged).
func schemaNames(t *testing.T) (byBlock map[string]map[string]bool, all map[string]bool) {
	t.Helper()
	var mu sync.Mutex
	byBlock, all = map[string]map[string]bool{}, map[string]bool{}
	label := regexp.MustCompile(` ".*$`)
	recordSchema = func(what string, attrs []string, blocks []hcl.BlockHeaderSchema) {
		mu.Lock()
		defer mu.Unlock()
		what = label.ReplaceAllString(what, "")
		if what == "top-level" {
			what = ""
		}
		m := byBlock[what]
		if m == nil {
			m = map[string]bool{}
			byBlock[what] = m
		}
		for _, a := range attrs {
			m[a], all[a] = true, true
		}
		for _, b := range blocks {
			m[b.Type], all[b.Type] = true, true
		}
	}
	defer func() { recordSchema = nil }()
	t.Setenv("API_KEY", "doc-value")
	t.Setenv("SLUICE_ADMIN_TOKEN", "doc-value")
	valid, _ := filepath.Glob("testdata/valid/*.hcl")
	for _, f := range valid {
		LoadFiles(f)
	}
	fixtures := fixtureDir(t)
	for _, b := range hclBlocks(t, repoRoot(t), "config/CONFIG.md") {
		if b.info == "" {
			Parse(filepath.Join(fixtures, "example.hcl"), withSite(b.src))
		}
	}
	for _, want := range []string{"", "site", "route", "static", "proxy", "tls", "filter", "listener", "telemetry"} {
		if len(byBlock[want]) == 0 {
			t.Fatalf("schema of %q not learned", want)
		}
	}
	return byBlock, all
}

var (
	// tableRow is a row of a Markdown table: its first cell.
	tableRow = regexp.MustCompile(`^\|([^|]*)\|`)
	codeSpan = regexp.MustCompile("`([^`]+)`")
	// A name as it opens a code span: `name`, `name {}`, `name "LABEL" {}`,
	// `name = value`.
	spanName = regexp.MustCompile(`^([a-z][a-z0-9_]*)\b`)
	// `block { attr … }` in prose: the block and its first attribute.
	spanBlockAttr = regexp.MustCompile(`^([a-z][a-z0-9_]*)(?: "[^"]*")? \{ *([a-z][a-z0-9_]*)\b`)
)

// snake is a bare snake_case name with at least one underscore.
var snake = regexp.MustCompile(`^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$`)

// proseWords are the snake_case words the reference and the handler
// READMEs may quote that are not attribute names: values of balance, ABI
// features and functions (sluice_* names, metrics and the sticky cookie,
// are allowed by prefix).
func proseWords() map[string]bool {
	m := map[string]bool{"snake_case": true, "buffer_request": true, "buffer_response": true, "get_header_values": true}
	for _, f := range AccessLogFields { // values of access_log's fields
		m[f] = true
	}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for _, f := range schemaOf(t) {
			for _, v := range strings.Split(f.opts["oneof"], "|") {
				m[v] = true
			}
			ft := t.Field(f.index).Type
			for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
				ft = ft.Elem()
			}
			if f.block && ft.Kind() == reflect.Struct {
				walk(ft)
			}
		}
	}
	for _, spec := range routeBlocks() {
		walk(reflect.TypeOf(spec.defaults()).Elem())
	}
	return m
}

// attributeTable reports whether a table's header names attributes in its
// first column.
func attributeTable(header string) bool {
	switch strings.TrimSpace(header) {
	case "attribute", "attribute / block", "block", "setting":
		return true
	}
	return false
}

// TestMarkdownNames checks the attribute names the documents state
// against the schema: the first column of every table headed "attribute",
// "attribute / block", "block" or "setting", in any Markdown file, and, in
// the reference and the handler READMEs (config/CONFIG.md, host/*/README.md),
// each code span that writes `block { attribute }` or `attribute = value`.
func TestMarkdownNames(t *testing.T) {
	byBlock, all := schemaNames(t)
	proseOK := proseWords()
	root := repoRoot(t)
	checked := 0
	for _, f := range markdownFiles(t, root) {
		doc, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		prose := f == "config/CONFIG.md" || (strings.HasPrefix(f, "host/") && strings.HasSuffix(f, "/README.md"))
		inTable, inFence := false, false
		for i, line := range strings.Split(string(doc), "\n") {
			if strings.HasPrefix(line, "```") {
				inFence = !inFence
				continue
			}
			if inFence {
				continue
			}
			where := f + ":" + strconv.Itoa(i+1)
			if m := tableRow.FindStringSubmatch(line); m != nil {
				cell := m[1]
				switch {
				case strings.HasPrefix(strings.TrimSpace(cell), "---"), strings.HasPrefix(strings.TrimSpace(cell), ":-"):
				case !strings.Contains(cell, "`"): // a header
					inTable = attributeTable(cell)
				case inTable:
					for _, s := range codeSpan.FindAllStringSubmatch(cell, -1) {
						if n := spanName.FindString(s[1]); n != "" {
							checked++
							if !all[n] {
								t.Errorf("%s: `%s` is not an attribute or block of the config", where, s[1])
							}
						}
					}
				}
			} else {
				inTable = false
			}
			if !prose {
				continue
			}
			for _, s := range codeSpan.FindAllStringSubmatch(line, -1) {
				span := s[1]
				if m := spanBlockAttr.FindStringSubmatch(span); m != nil {
					checked++
					if inner, ok := byBlock[m[1]]; !ok {
						t.Errorf("%s: `%s`: there is no %s block", where, span, m[1])
					} else if !inner[m[2]] {
						t.Errorf("%s: `%s`: the %s block has no %q (it has %s)", where, span, m[1], m[2], names(inner))
					}
					continue
				}
				if m := regexp.MustCompile(`^([a-z][a-z0-9_]*) = `).FindStringSubmatch(span); m != nil {
					checked++
					if !all[m[1]] {
						t.Errorf("%s: `%s`: %q is not an attribute of the config", where, span, m[1])
					}
					continue
				}
				// A bare snake_case name reads as an attribute: it must be
				// one, or a value or name the prose is allowed to quote.
				if snake.MatchString(span) && !all[span] && !proseOK[span] && !strings.HasPrefix(span, "sluice_") {
					checked++
					t.Errorf("%s: `%s` is not an attribute or block of the config", where, span)
				}
			}
		}
	}
	if checked < 100 {
		t.Errorf("checked %d names, want the reference's tables", checked)
	}
}

func names(m map[string]bool) string {
	var l []string
	for k := range m {
		l = append(l, k)
	}
	sort.Strings(l)
	return strings.Join(l, ", ")
}

// mdTables returns the Markdown tables of text (runs of lines starting
// with "|"), with their byte offsets.
func mdTables(text string) (tables []string, at [][2]int) {
	lines := strings.SplitAfter(text, "\n")
	off, start := 0, -1
	for _, l := range lines {
		if strings.HasPrefix(l, "|") {
			if start < 0 {
				start = off
			}
		} else if start >= 0 {
			tables, at = append(tables, text[start:off]), append(at, [2]int{start, off})
			start = -1
		}
		off += len(l)
	}
	if start >= 0 {
		tables, at = append(tables, text[start:]), append(at, [2]int{start, len(text)})
	}
	return tables, at
}

// TestReference checks that the section of config/CONFIG.md of each
// registered block kind ("## proxy") shows the tables Reference makes of
// the kind's schema, in order: the handler's folder is where its
// reference is written. -update rewrites them.
func TestReference(t *testing.T) {
	path := filepath.Join(repoRoot(t), "config", "CONFIG.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	kinds := routeBlocks()
	if len(kinds) < 4 {
		t.Fatalf("%d block kinds registered, want static, proxy, respond and rate_limit", len(kinds))
	}
	for _, spec := range kinds {
		want := Reference(spec.kind)
		head := "\n## " + spec.kind + "\n"
		start := strings.Index(text, head)
		if start < 0 {
			t.Errorf("CONFIG.md has no %q section", strings.TrimSpace(head))
			continue
		}
		start += len(head)
		end := strings.Index(text[start:], "\n## ")
		if end < 0 {
			end = len(text) - start
		}
		section := text[start : start+end]
		got, at := mdTables(section)
		if len(got) < len(want) {
			t.Errorf("CONFIG.md section %s: %d tables, want %d:\n%s", spec.kind, len(got), len(want), strings.Join(want, "\n"))
			continue
		}
		for i := len(want) - 1; i >= 0; i-- {
			if got[i] == want[i] {
				continue
			}
			if *update {
				section = section[:at[i][0]] + want[i] + section[at[i][1]:]
				continue
			}
			t.Errorf("CONFIG.md section %s, table %d differs from the schema (go test ./config -run TestReference -update):\n--- got\n%s--- want\n%s", spec.kind, i+1, got[i], want[i])
		}
		text = text[:start] + section + text[start+end:]
	}
	if *update && text != string(doc) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
