package readme

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/conformance/internal/gotool"
	"github.com/sluicehq/sluice/host"
)

// root is the repository root, from this package's folder.
const root = "../.."

// script is what a README asks a reader to run: its `sh run` blocks and
// `file=` blocks, in order, as one bash script.
type script struct {
	text    string
	modules []string // the modules its `sluice filter run` lines name
}

var (
	fence     = regexp.MustCompile("^```(\\S*)(.*)$")
	fileAttr  = regexp.MustCompile(`(?:^|\s)file=(\S+)`)
	filterRun = regexp.MustCompile(`\bsluice filter run (\S+\.wasm)`)
)

// parse extracts the script of a README.
func parse(path string) (script, error) {
	f, err := os.Open(path)
	if err != nil {
		return script{}, err
	}
	defer f.Close()
	var (
		s       script
		b       strings.Builder
		in      bool
		run     bool
		file    string
		content strings.Builder
		n       int
	)
	b.WriteString("set -euo pipefail\n")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		m := fence.FindStringSubmatch(line)
		switch {
		case !in && m != nil:
			in = true
			lang, info := m[1], m[2]
			words := strings.Fields(info)
			run = lang == "sh" && len(words) > 0 && words[0] == "run"
			file = ""
			if fm := fileAttr.FindStringSubmatch(info); fm != nil {
				file = fm[1]
			}
			if strings.Contains(info, "run") && !run {
				return s, fmt.Errorf("%s:%d: only ```sh run blocks are run, not %q", path, n, line)
			}
			content.Reset()
		case in && line == "```":
			in = false
			switch {
			case run:
				fmt.Fprintf(&b, "# %s:%d\n%s", filepath.Base(path), n, content.String())
				for _, m := range filterRun.FindAllStringSubmatch(content.String(), -1) {
					s.modules = append(s.modules, m[1])
				}
			case file != "":
				fmt.Fprintf(&b, "# %s:%d\ncat > %q <<'README_TEST_EOF'\n%sREADME_TEST_EOF\n", filepath.Base(path), n, file, content.String())
			}
		case in:
			content.WriteString(line)
			content.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		return s, err
	}
	if in {
		return s, fmt.Errorf("%s: unclosed fenced block", path)
	}
	s.text = b.String()
	return s, nil
}

// lang is a README under test and the toolchain it needs.
type lang struct {
	name   string
	readme string // from the repository root
	// dir is where its script starts, in the temporary folder that holds
	// the checkout copy as sluice/.
	dir string
	// missing says what of the toolchain is not installed ("" when all is).
	missing func() string
	// serve drives what the script built through a served route.
	serve func(t *testing.T, tmp, cwd string, s script)
}

func need(cmds ...string) string {
	for _, c := range cmds {
		if _, err := exec.LookPath(c); err != nil {
			return c + " is not on PATH"
		}
	}
	return ""
}

func needFile(path, why string) string {
	if _, err := os.Stat(path); err != nil {
		return why
	}
	return ""
}

var langs = []lang{
	{name: "go", readme: "sdk/go/README.md", missing: func() string { return need("go") }, serve: serveModule},
	{name: "c", readme: "sdk/c/README.md", missing: func() string {
		if m := need("clang", "wasm-ld"); m != "" {
			return m + " (apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32)"
		}
		return needFile("/usr/lib/wasm32-wasi/libc.a", "no wasi-libc (apt-get install wasi-libc)")
	}, serve: serveModule},
	{name: "rust", readme: "sdk/rust/README.md", missing: func() string {
		out, err := exec.Command("/usr/bin/rustc", "--print", "sysroot").Output()
		if err != nil {
			return "no /usr/bin/rustc (apt-get install rustc libstd-rust-dev-wasm32)"
		}
		return needFile(filepath.Join(strings.TrimSpace(string(out)), "lib/rustlib/wasm32-wasi"), "no wasm32-wasi std for /usr/bin/rustc (apt-get install libstd-rust-dev-wasm32)")
	}, serve: serveModule},
	{name: "assemblyscript", readme: "sdk/assemblyscript/README.md", missing: func() string {
		if m := need("node", "npm"); m != "" {
			return m + " (apt-get install nodejs npm)"
		}
		// assemblyscript 0.28.20 declares node >= 20.
		out, err := exec.Command("node", "-p", "process.versions.node.split('.')[0]").Output()
		if major := strings.TrimSpace(string(out)); err != nil || len(major) < 2 || major < "20" {
			return fmt.Sprintf("node %s is older than the 20 assemblyscript 0.28.20 needs", major)
		}
		return ""
	}, serve: serveModule},
	{name: "custom-filter", readme: "examples/custom-filter/README.md", dir: "sluice/examples/custom-filter", missing: func() string { return need("go", "make") }, serve: serveCustomFilter},
}

// TestREADMEs runs each README's script in a temporary copy of the SDKs
// and examples/custom-filter, with a freshly built sluice on PATH, then
// serves what it built. Under plain `go test` a README whose toolchain is
// missing is skipped (and says so); under the conformance tag (make
// conformance, CI) that is a failure.
func TestREADMEs(t *testing.T) {
	tmp := t.TempDir()
	for _, dir := range []string{"sdk", "examples/custom-filter"} {
		if err := copyTree(filepath.Join(root, dir), filepath.Join(tmp, "sluice", dir)); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(tmp, "bin")
	start := time.Now()
	if err := gotool.Sluice(filepath.Join(bin, "sluice")); err != nil {
		t.Fatal(err)
	}
	t.Logf("sluice built in %s", time.Since(start).Round(100*time.Millisecond))

	var (
		mu      sync.Mutex
		summary []string
	)
	t.Cleanup(func() { t.Logf("README runs (strict=%v):\n\t%s", strict, strings.Join(summary, "\n\t")) })
	report := func(format string, a ...any) {
		mu.Lock()
		summary = append(summary, fmt.Sprintf(format, a...))
		mu.Unlock()
	}
	for _, l := range langs {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			if m := l.missing(); m != "" {
				report("%s: SKIPPED: %s", l.name, m)
				if strict {
					t.Fatalf("toolchain missing: %s", m)
				}
				t.Skipf("toolchain missing: %s", m)
			}
			s, err := parse(filepath.Join(root, l.readme))
			if err != nil {
				t.Fatal(err)
			}
			if len(s.modules) == 0 {
				t.Fatalf("%s runs no `sluice filter run`", l.readme)
			}
			start := time.Now()
			work := filepath.Join(tmp, l.name)
			if l.dir != "" {
				work = filepath.Join(tmp, l.dir)
			}
			if err := os.MkdirAll(work, 0o755); err != nil {
				t.Fatal(err)
			}
			// Each SDK README works in myfilter/ beside the checkout.
			if l.dir == "" {
				if err := os.Symlink(filepath.Join(tmp, "sluice"), filepath.Join(work, "sluice")); err != nil {
					t.Fatal(err)
				}
			}
			cwdFile := filepath.Join(t.TempDir(), "cwd")
			text := s.text + fmt.Sprintf("pwd > %q\n", cwdFile)
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-c", text)
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			if err != nil {
				if l.name == "assemblyscript" && !strict && offline(out) {
					report("%s: SKIPPED: the npm registry is unreachable", l.name)
					t.Skipf("the npm registry is unreachable:\n%s", out)
				}
				t.Fatalf("%s, run as written: %v\n--- script\n%s\n--- output\n%s", l.readme, err, text, out)
			}
			if strict && l.name == "custom-filter" && bytes.Contains(out, []byte("skipped")) {
				t.Fatalf("make wasm skipped a language:\n%s", out)
			}
			if c := bytes.Count(out, []byte("403 Forbidden")); c < len(s.modules) {
				t.Errorf("%d of %d `sluice filter run` lines answered 403 Forbidden:\n%s", c, len(s.modules), out)
			}
			built := time.Since(start)
			cwd, err := os.ReadFile(cwdFile)
			if err != nil {
				t.Fatal(err)
			}
			serveStart := time.Now()
			l.serve(t, tmp, strings.TrimSpace(string(cwd)), s)
			checkDebugBuild(t, l.name, strings.TrimSpace(string(cwd)), s)
			report("%s: %s (README script %s, served route %s)", l.name, time.Since(start).Round(100*time.Millisecond),
				built.Round(100*time.Millisecond), time.Since(serveStart).Round(100*time.Millisecond))
		})
	}
}

// offline reports whether npm failed for want of the registry.
func offline(out []byte) bool {
	return regexp.MustCompile(`ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ENETUNREACH|network request`).Match(out)
}

// checkDebugBuild: the README's debug build keeps the name section, so
// traps name functions: the *-debug.wasm its debug build line wrote (C,
// Rust, AssemblyScript), or Go's one build.
func checkDebugBuild(t *testing.T, lang, cwd string, s script) {
	t.Helper()
	var debug []string
	switch lang {
	case "custom-filter":
		return
	case "go":
		debug = []string{filepath.Join(cwd, s.modules[0])}
	default:
		debug, _ = filepath.Glob(filepath.Join(cwd, "*-debug.wasm"))
		if len(debug) == 0 {
			t.Errorf("no *-debug.wasm in %s: the README has no debug build line", cwd)
		}
	}
	for _, p := range debug {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !hasNameSection(b) {
			t.Errorf("%s has no name section: its traps would number functions", p)
		}
	}
}

// hasNameSection reports whether a module has a "name" custom section.
func hasNameSection(b []byte) bool {
	if len(b) < 8 {
		return false
	}
	b = b[8:]
	for len(b) > 0 {
		id := b[0]
		size, n := uleb(b[1:])
		if n == 0 || 1+n+int(size) > len(b) {
			return false
		}
		body := b[1+n : 1+n+int(size)]
		if id == 0 {
			l, m := uleb(body)
			if m > 0 && m+int(l) <= len(body) && string(body[m:m+int(l)]) == "name" {
				return true
			}
		}
		b = b[1+n+int(size):]
	}
	return false
}

func uleb(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

// upstream reports what reached it.
func upstream(t *testing.T) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "upstream saw %s X-Hello=%q X-Example=%q", r.URL.Path, r.Header.Get("X-Hello"), r.Header.Get("X-Example"))
	}))
	t.Cleanup(up.Close)
	return up
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// boot serves the config at path until t ends.
func boot(t *testing.T, path string) {
	t.Helper()
	inst, err := host.Start(host.InstanceOptions{Path: path, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		inst.Shutdown(ctx)
	})
}

func get(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// serveModule serves the module an SDK README built (the first its
// `sluice filter run` line names) with the README's config, in front of
// an upstream: /admin/ is answered 403, the rest reaches the upstream
// with X-Hello: world.
func serveModule(t *testing.T, tmp, cwd string, s script) {
	t.Helper()
	up := upstream(t)
	listen := freeAddr(t)
	cfg := fmt.Sprintf(`filter "readme" {
  module = %q
  config = { deny_prefix = "/admin/" }
  memory = "32MiB"
}

site "localhost" {
  aliases = ["127.0.0.1"]
  listen  = [%q]

  route "/" {
    filters = ["readme"]
    proxy {
      upstreams = [%q]
    }
  }
}
`, filepath.Join(cwd, s.modules[0]), listen, up.URL)
	path := filepath.Join(t.TempDir(), "sluice.hcl")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	boot(t, path)
	base := "http://" + listen
	if code, _, body := get(t, base+"/admin/x"); code != 403 || body != "forbidden\n" {
		t.Errorf("served /admin/x: %d %q, want 403 forbidden", code, body)
	}
	if code, _, body := get(t, base+"/hello"); code != 200 || body != `upstream saw /hello X-Hello="world" X-Example=""` {
		t.Errorf("served /hello: %d %q, want the upstream with X-Hello: world", code, body)
	}
}

// serveCustomFilter serves examples/custom-filter/sluice.hcl (its
// modules as the README's make wasm left them) in front of an upstream.
func serveCustomFilter(t *testing.T, tmp, cwd string, s script) {
	t.Helper()
	up := upstream(t)
	listen := freeAddr(t)
	src, err := os.ReadFile(filepath.Join(cwd, "sluice.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.NewReplacer(`"http://127.0.0.1:9000"`, `"`+up.URL+`"`, `"127.0.0.1:8080"`, `"`+listen+`"`).Replace(string(src))
	path := filepath.Join(cwd, "readme-test.hcl")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	boot(t, path)
	base := "http://" + listen
	for _, l := range []struct{ dir, prefix string }{{"go", "/go/"}, {"c", "/c/"}, {"assemblyscript", "/as/"}, {"rust", "/rust/"}} {
		code, h, body := get(t, base+l.prefix+"hello")
		if want := fmt.Sprintf(`X-Example="from %s"`, l.dir); code != 200 || !strings.Contains(body, want) || h.Get("X-Filtered-By") != "custom-filter" {
			t.Errorf("%s: %d %q X-Filtered-By %q, want 200 with %s, tagged", l.dir, code, body, h.Get("X-Filtered-By"), want)
		}
		if code, _, body := get(t, base+l.prefix+"private/x"); code != 403 || body != "forbidden\n" {
			t.Errorf("%s private: %d %q, want 403 forbidden", l.dir, code, body)
		}
	}
}

// copyTree copies src to dst, leaving out what a checkout does not hold
// (node_modules, target).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			if d.Name() == "node_modules" || d.Name() == "target" {
				return filepath.SkipDir
			}
			return os.MkdirAll(out, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, info.Mode().Perm())
	})
}

// TestHasNameSection: the check above tells a stripped release module
// from one built with names.
func TestHasNameSection(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"examples/custom-filter/c/filter.wasm", false},     // -Wl,--strip-all
		{"examples/custom-filter/rust/filter.wasm", false},  // -C strip=symbols
		{"cmd/sluice/testdata/rustpanic/filter.wasm", true}, // -C strip=debuginfo
		{"examples/custom-filter/go/filter.wasm", true},
	} {
		b, err := os.ReadFile(filepath.Join(root, tc.path))
		if err != nil {
			t.Fatal(err)
		}
		if got := hasNameSection(b); got != tc.want {
			t.Errorf("%s: name section %v, want %v", tc.path, got, tc.want)
		}
	}
}
