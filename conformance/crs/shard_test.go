//go:build conformance

package crs

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coreruleset/go-ftw/config"
	"github.com/coreruleset/go-ftw/output"
	"github.com/coreruleset/go-ftw/runner"
	"github.com/coreruleset/go-ftw/test"
	"github.com/rs/zerolog"
)

// runShard is the child process of shard "i/n": its own echo backend,
// its own sluice and log file, every n-th test file from the i-th.
func runShard(t *testing.T, shard string) {
	var i, n int
	if _, err := fmt.Sscanf(shard, "%d/%d", &i, &n); err != nil || n < 1 || i < 0 || i >= n {
		t.Fatalf("%s=%q: want i/n", envShard, shard)
	}
	files, err := filepath.Glob(filepath.Join(os.Getenv(envTests), "*", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRS tests under %s: %v", os.Getenv(envTests), err)
	}
	sort.Strings(files)
	var tests []*test.FTWTest
	for k, f := range files {
		if k%n != i {
			continue
		}
		ts, err := test.GetTestsFromFiles(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		tests = append(tests, ts...)
	}

	backend := httptest.NewServer(http.HandlerFunc(albedo))
	defer backend.Close()
	dir := t.TempDir()
	port := freePort(t)
	cfg := filepath.Join(dir, "sluice.hcl")
	if err := os.WriteFile(cfg, []byte(sluiceConfig(os.Getenv(envModule), port, backend.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "sluice.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-30*time.Second))
		defer cancel()
	}
	srv := exec.CommandContext(ctx, os.Getenv(envBin), "serve", "-c", cfg)
	pipe, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	srv.Stdout = io.Discard
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	relayed := make(chan struct{})
	go func() { relayLog(pipe, logFile); close(relayed) }()
	defer func() { <-relayed }()
	exited := make(chan struct{})
	go func() { srv.Wait(); close(exited) }()
	defer func() {
		srv.Process.Signal(os.Interrupt)
		select {
		case <-exited:
			return
		default:
		}
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			srv.Process.Kill()
		}
	}()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	if err := waitReady(ctx, exited, addr, 5*time.Minute); err != nil {
		b, _ := os.ReadFile(logPath)
		t.Fatalf("sluice did not start: %v\n%s", err, tail(string(b), 4000))
	}

	zerolog.SetGlobalLevel(zerolog.WarnLevel) // go-ftw traces every file it reads
	fc := config.NewDefaultConfig()
	fc.WithLogfile(logPath)
	host := "127.0.0.1"
	fc.WithOverrides(config.FTWTestOverride{Overrides: config.Overrides{DestAddr: &host, Port: &port}})
	rc := &runner.RunnerConfig{
		ShowOnlyFailed: true,
		ConnectTimeout: 5 * time.Second,
		ReadTimeout:    90 * time.Second, // above the filter's timeout
	}
	if inc := os.Getenv(envInclude); inc != "" {
		rc.Include = regexp.MustCompile(inc)
	}
	start := time.Now()
	report, err := os.Create(os.Getenv(envResult) + ".txt")
	if err != nil {
		t.Fatal(err)
	}
	defer report.Close()
	rctx, err := runner.Run(fc, tests, rc, output.NewOutput("plain", report))
	if err != nil {
		t.Fatalf("go-ftw: %v", err)
	}
	st := rctx.Stats
	res := result{Run: st.Run, Success: st.Success, Failed: st.Failed, Skipped: st.Skipped, Seconds: time.Since(start).Seconds()}
	b, _ := json.Marshal(res)
	if err := os.WriteFile(os.Getenv(envResult), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// relayLog copies sluice's log to the file go-ftw reads, each record's
// msg unquoted: the waf's lines are then the ModSecurity-style lines the
// CRS's match_regex checks are written against ([id "942100"], not the
// log format's escaped [id \"942100\"]).
func relayLog(r io.Reader, w io.Writer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, " msg=\""); i >= 0 {
			if q, err := strconv.QuotedPrefix(line[i+5:]); err == nil {
				if msg, err := strconv.Unquote(q); err == nil {
					line = line[:i+5] + msg + line[i+5+len(q):]
				}
			}
		}
		io.WriteString(w, line+"\n")
	}
}

// albedo answers as the CRS's test backend (github.com/coreruleset/albedo)
// does: POST /reflect returns the status, headers and body its JSON
// request names; anything else gets 200 and a short body.
func albedo(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if r.URL.Path != "/reflect" {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "ok\n")
		return
	}
	var spec struct {
		Status      int               `json:"status"`
		Headers     map[string]string `json:"headers"`
		Body        string            `json:"body"`
		EncodedBody string            `json:"encodedBody"`
	}
	if err := json.Unmarshal(body, &spec); err != nil {
		http.Error(w, "bad reflect spec: "+err.Error(), http.StatusBadRequest)
		return
	}
	out := []byte(spec.Body)
	if spec.EncodedBody != "" {
		b, err := base64.StdEncoding.DecodeString(spec.EncodedBody)
		if err != nil {
			http.Error(w, "bad encodedBody", http.StatusBadRequest)
			return
		}
		out = b
	}
	for k, v := range spec.Headers {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/plain")
	}
	if spec.Status == 0 {
		spec.Status = 200
	}
	w.WriteHeader(spec.Status)
	w.Write(out)
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitReady waits until sluice answers on addr (its filter instances
// are up), polling, for at most limit.
func waitReady(ctx context.Context, exited <-chan struct{}, addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	c := &http.Client{Timeout: 5 * time.Second}
	var last error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		select {
		case <-exited:
			return fmt.Errorf("sluice exited")
		default:
		}
		resp, err := c.Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
			last = fmt.Errorf("status %d", resp.StatusCode)
		} else {
			last = err
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("not ready after %s: %v", limit, strings.TrimSpace(fmt.Sprint(last)))
}
