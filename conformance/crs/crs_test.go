//go:build conformance

package crs

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The env of a shard: the test binary runs itself once per shard, since
// go-ftw keeps state in package variables (one runner per process).
const (
	envShard   = "SLUICE_CRS_SHARD"   // "i/n"
	envBin     = "SLUICE_CRS_BIN"     // the sluice binary
	envTests   = "SLUICE_CRS_TESTS"   // the CRS tests/ directory
	envResult  = "SLUICE_CRS_RESULT"  // where the shard writes its result
	envModule  = "SLUICE_CRS_WASM"    // filters/waf/waf.wasm
	envShards  = "SLUICE_CRS_SHARDS"  // shard count; default: the CPUs
	envInclude = "SLUICE_CRS_INCLUDE" // a regexp of test ids, to run a few
)

// result is what a shard reports.
type result struct {
	Run     int      `json:"run"`
	Success []string `json:"success"`
	Failed  []string `json:"failed"`
	Skipped []string `json:"skipped"`
	Seconds float64  `json:"seconds"`
}

// TestCRSRegression runs every test of the CRS's regression suite (the
// tests/ tree of the coraza-coreruleset module that filters/waf embeds,
// fetched through the Go module proxy) against `sluice serve` with the waf
// filter in detection mode at paranoia 4, the set-up the CRS's suite
// documents. Each failure must be listed, with its reason, in
// conformance/README.md (section crs); a listed test that passes fails
// the run too, so the list stays true.
func TestCRSRegression(t *testing.T) {
	if s := os.Getenv(envShard); s != "" {
		runShard(t, s)
		return
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	known := knownFailures(t, filepath.Join(root, "conformance", "README.md"))
	tests := crsTests(t, root)
	bin := buildSluice(t, root)

	n := runtime.NumCPU()
	if v, err := strconv.Atoi(os.Getenv(envShards)); err == nil && v > 0 {
		n = v
	}
	// The shards stop a minute before this test's deadline, to report.
	deadline := time.Now().Add(20 * time.Minute)
	if d, ok := t.Deadline(); ok {
		deadline = d.Add(-time.Minute)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	type done struct {
		i   int
		res result
		err error
	}
	ch := make(chan done, n)
	for i := range n {
		go func() {
			res, err := startShard(ctx, t, i, n, bin, tests, filepath.Join(root, "filters", "waf", "waf.wasm"))
			ch <- done{i, res, err}
		}()
	}
	var all result
	for range n {
		d := <-ch
		if d.err != nil {
			t.Errorf("shard %d/%d: %v", d.i, n, d.err)
			continue
		}
		t.Logf("shard %d/%d: %d tests in %.0fs, %d failed", d.i, n, d.res.Run, d.res.Seconds, len(d.res.Failed))
		all.Run += d.res.Run
		all.Success = append(all.Success, d.res.Success...)
		all.Failed = append(all.Failed, d.res.Failed...)
		all.Skipped = append(all.Skipped, d.res.Skipped...)
	}
	slices.Sort(all.Failed)
	t.Logf("CRS regression: %d tests, %d passed, %d failed (%d listed in conformance/README.md), %d skipped, in %s on %d shards",
		all.Run, len(all.Success), len(all.Failed), len(known), len(all.Skipped), time.Since(start).Round(time.Second), n)
	if t.Failed() {
		return
	}
	for _, id := range all.Failed {
		if _, ok := known[id]; !ok {
			t.Errorf("%s failed and is not listed in conformance/README.md", id)
		}
	}
	if dir := os.Getenv("SLUICE_CRS_REPORTS"); dir != "" {
		t.Logf("go-ftw's reports (failed tests only) are in %s", dir)
	}
	if os.Getenv(envInclude) != "" {
		return // a partial run says nothing of the rest of the list
	}
	for id := range known {
		if slices.Contains(all.Success, id) {
			t.Errorf("%s passes now: remove it from conformance/README.md", id)
		}
	}
}

// knownFailures reads the table of the README's crs section: rows of
// "| `TEST-ID` | reason |".
func knownFailures(t *testing.T, readme string) map[string]string {
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## crs ")
	if !ok {
		t.Fatalf("%s: no \"## crs\" section", readme)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `(\\d+-\\d+)` \\| (.+) \\|$")
	out := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(sec, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// crsTests downloads, through the module proxy, the coraza-coreruleset
// version filters/waf requires and returns its tests/ directory.
func crsTests(t *testing.T, root string) string {
	mod, err := os.ReadFile(filepath.Join(root, "filters", "waf", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?(github\.com/corazawaf/coraza-coreruleset/v4) (v\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("filters/waf/go.mod: no coraza-coreruleset requirement")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", string(m[1])+"@"+string(m[2]))
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s@%s: %v\n%s", m[1], m[2], err, out)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		t.Fatalf("go mod download: %v %s", err, info.Error)
	}
	return filepath.Join(info.Dir, "tests")
}

func buildSluice(t *testing.T, root string) string {
	bin := filepath.Join(t.TempDir(), "sluice")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/sluice")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/sluice: %v\n%s", err, out)
	}
	return bin
}

// startShard runs shard i of n in a child process and reads its result.
func startShard(ctx context.Context, t *testing.T, i, n int, bin, tests, wasm string) (result, error) {
	dir := os.Getenv("SLUICE_CRS_REPORTS") // keeps go-ftw's report of each shard
	if dir == "" {
		dir = t.TempDir()
	}
	out := filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))
	limit := 20 * time.Minute
	if d, ok := ctx.Deadline(); ok {
		limit = time.Until(d)
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", "^TestCRSRegression$", "-test.timeout", limit.String())
	cmd.Env = append(os.Environ(),
		envShard+"="+fmt.Sprintf("%d/%d", i, n), envBin+"="+bin, envTests+"="+tests,
		envResult+"="+out, envModule+"="+wasm)
	log, err := cmd.CombinedOutput()
	var res result
	if b, rerr := os.ReadFile(out); rerr == nil {
		if jerr := json.Unmarshal(b, &res); jerr != nil {
			return res, jerr
		}
	} else if err == nil {
		err = rerr
	}
	if err != nil {
		return res, fmt.Errorf("%v\n%s", err, tail(string(log), 4000))
	}
	return res, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// ftwSetup is the configuration the CRS regression suite expects
// (tests/regression/README.md of coreruleset, "Requirements"), and the
// marker rule go-ftw finds its requests by in the log.
var ftwSetup = []string{
	`SecAction "id:900005,phase:1,nolog,pass,ctl:ruleRemoveById=910000,setvar:tx.crs_validate_utf8_encoding=1,setvar:tx.arg_name_length=100,setvar:tx.arg_length=400,setvar:tx.total_arg_length=64000,setvar:tx.max_num_args=255,setvar:tx.max_file_size=64100,setvar:tx.combined_file_sizes=65535"`,
	`SecRule REQUEST_HEADERS:X-CRS-Test "@rx ^.*$" "id:999999,phase:1,pass,t:none,log,msg:'X-CRS-Test %{MATCHED_VAR}',ctl:ruleRemoveById=1-999998"`,
}

// sluiceConfig serves the waf filter in front of backend on port.
func sluiceConfig(wasm string, port int, backend string) string {
	setup, _ := json.Marshal(ftwSetup)
	// HCL strings are templates: %{ and ${ are escaped by doubling.
	hcl := strings.NewReplacer("%{", "%%{", "${", "$${").Replace(string(setup))
	return fmt.Sprintf(`
filter "waf" {
  module       = %q
  memory       = "512MiB"
  timeout      = "60s"
  init_timeout = "5m"
  max_buffer   = "2MiB"
  config = {
    mode                = "detect"
    paranoia            = 4
    request_body_limit  = 1048576
    response_body_limit = 1048576
    inspect_limit       = 0 # the suite measures the rules, not their cost: no bound
    setup               = %s
  }
  pool {
    size = 2
  }
}
listener "127.0.0.1:%d" {
  read_timeout = "30s"
}
site "*" {
  listen = ["127.0.0.1:%d"]
  route "/" {
    filters = ["waf"]
    proxy {
      upstreams = [%q]
    }
  }
}
`, wasm, hcl, port, port, backend)
}
