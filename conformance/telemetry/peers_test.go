//go:build conformance

package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host"
)

const jaegerVersion = "v1.76.0"

// missing skips the test for a peer that is not there, or fails it under
// SLUICE_CONFORMANCE_STRICT=1.
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("SLUICE_CONFORMANCE_STRICT") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// prometheusBinary returns the Prometheus server to run.
func prometheusBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SLUICE_PROMETHEUS"); p != "" {
		return p
	}
	for _, p := range []string{"/usr/bin/prometheus"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("prometheus"); err == nil {
		return p
	}
	missing(t, "prometheus not installed (Debian: apt-get install -y prometheus)")
	return ""
}

// jaegerBinary returns a Jaeger all-in-one binary, building it once into
// the cache beside the Go build cache.
func jaegerBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SLUICE_JAEGER"); p != "" {
		return p
	}
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		missing(t, "go env GOCACHE: %v", err)
	}
	dir := filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), "sluice-conformance")
	bin := filepath.Join(dir, "jaeger-"+jaegerVersion)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	timeout := 15 * time.Minute
	if s := os.Getenv("SLUICE_JAEGER_BUILD_TIMEOUT"); s != "" {
		if d, err := time.ParseDuration(s); err == nil {
			timeout = d
		}
	}
	t.Logf("building Jaeger %s into %s (once; at most %v)", jaegerVersion, bin, timeout)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		missing(t, "jaeger: %v", err)
	}
	// Its go.mod has a replace directive, so `go install pkg@version`
	// refuses it: build it as a tool of a throwaway module instead.
	mod := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tmp := bin + ".tmp"
	for _, args := range [][]string{
		{"mod", "init", "sluice.test/jaegerbuild"},
		{"get", "-tool", "github.com/jaegertracing/jaeger/cmd/jaeger@" + jaegerVersion},
		{"build", "-o", tmp, "github.com/jaegertracing/jaeger/cmd/jaeger"},
	} {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			missing(t, "jaeger %s: go %s: %v (ctx: %v)\n%s", jaegerVersion, strings.Join(args, " "), err, ctx.Err(), tail(out, 3000))
		}
	}
	if err := os.Rename(tmp, bin); err != nil {
		missing(t, "jaeger: %v", err)
	}
	return bin
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// startProcess runs a peer until the test ends; its output goes to a file
// (whose path it returns) that is printed when the test fails.
func startProcess(t *testing.T, name string, args ...string) string {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), filepath.Base(name)+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	// Peers must not trace themselves to a default collector.
	cmd.Env = append(os.Environ(), "OTEL_SDK_DISABLED=true", "OTEL_TRACES_EXPORTER=none")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("%s output (tail):\n%s", filepath.Base(name), tail(b, 4000))
		}
	})
	return logPath
}

// waitHTTP polls url until it answers 200 or the deadline passes.
func waitHTTP(t *testing.T, url string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var last string
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s not ready after %v: %s", url, within, last)
}

// getJSON decodes url's JSON body into v.
func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	return json.Unmarshal(b, v)
}

// startSluice runs sluice in this process on the config src until the
// test ends.
func startSluice(t *testing.T, src string) *host.Instance {
	t.Helper()
	inst, err := tryStart(t, src)
	if err != nil {
		t.Fatalf("sluice: %v", err)
	}
	return inst
}

// tryStart is startSluice that returns the error.
func tryStart(t *testing.T, src string) (*host.Instance, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sluice.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	inst, err := host.Start(host.InstanceOptions{Path: path, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = inst.Shutdown(ctx)
	})
	return inst, nil
}

// send makes n requests and fails the test on any non-2xx answer.
func send(t *testing.T, url string, n int, hdr map[string]string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	for range n {
		req, _ := http.NewRequest("GET", url, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("GET %s: %s", url, resp.Status)
		}
	}
}
