package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/config"
)

// TestMain lets a test run this binary as sluice itself: with
// SLUICE_TEST_MAIN set, the test binary is the CLI.
func TestMain(m *testing.M) {
	if os.Getenv("SLUICE_TEST_MAIN") == "1" {
		os.Args = append([]string{"sluice"}, strings.Fields(os.Getenv("SLUICE_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// sluice starts the CLI with args in dir.
func sluice(t *testing.T, dir string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SLUICE_TEST_MAIN=1", "SLUICE_TEST_ARGS="+strings.Join(args, " "))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	return cmd, &out
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitGet polls url until it answers, for at most 10 s.
func waitGet(t *testing.T, url string) (int, string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode, string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never answered: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitExit(t *testing.T, cmd *exec.Cmd, out *bytes.Buffer) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(15 * time.Second):
		t.Fatalf("sluice did not exit; output:\n%s", out)
		return -1
	}
}

// TestServeReloadAndDrain: `sluice serve -c` serves, SIGHUP reloads a
// changed config, a bad config on SIGHUP is refused while the old one
// keeps serving, and SIGTERM exits 0.
func TestServeReloadAndDrain(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	conf := func(body string) {
		src := fmt.Sprintf("site \"*\" {\n  listen = [%q]\n  route \"/\" {\n    respond { body = %q }\n  }\n}\n", addr, body)
		if err := os.WriteFile(filepath.Join(dir, "sluice.hcl"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	conf("one")
	cmd, out := sluice(t, dir, "serve", "-c", "sluice.hcl")
	if _, body := waitGet(t, "http://"+addr+"/"); body != "one" {
		t.Fatalf("first config: %q", body)
	}
	conf("two")
	cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, body := waitGet(t, "http://"+addr+"/"); body == "two" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("SIGHUP did not reload; output:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	os.WriteFile(filepath.Join(dir, "sluice.hcl"), []byte("site {"), 0o644)
	cmd.Process.Signal(syscall.SIGHUP)
	time.Sleep(300 * time.Millisecond)
	if _, body := waitGet(t, "http://"+addr+"/"); body != "two" {
		t.Fatalf("after a bad reload: %q", body)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if rc := waitExit(t, cmd, out); rc != 0 {
		t.Fatalf("exit %d after SIGTERM; output:\n%s", rc, out)
	}
	if !strings.Contains(out.String(), "reload refused") {
		t.Errorf("a refused reload was not logged:\n%s", out)
	}
}

// TestReloadCommand: `sluice reload --admin ADDR` reloads a running
// server through its admin API, which accepts the Host the command sends
// (the address given, or a loopback name with the port).
func TestReloadCommand(t *testing.T) {
	dir := t.TempDir()
	addr, aaddr := freeAddr(t), freeAddr(t)
	_, aport, _ := net.SplitHostPort(aaddr)
	conf := func(body string) {
		src := fmt.Sprintf("admin {\n  listen = %q\n}\nsite \"*\" {\n  listen = [%q]\n  route \"/\" {\n    respond { body = %q }\n  }\n}\n", aaddr, addr, body)
		if err := os.WriteFile(filepath.Join(dir, "sluice.hcl"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	conf("one")
	cmd, out := sluice(t, dir, "serve", "-c", "sluice.hcl")
	if _, body := waitGet(t, "http://"+addr+"/"); body != "one" {
		t.Fatalf("first config: %q", body)
	}
	for i, admin := range []string{aaddr, "localhost:" + aport} {
		want := fmt.Sprint("v", i)
		conf(want)
		if rc := cmdReload([]string{"--admin", admin}); rc != 0 {
			t.Fatalf("sluice reload --admin %s: exit %d; output:\n%s", admin, rc, out)
		}
		if _, body := waitGet(t, "http://"+addr+"/"); body != want {
			t.Fatalf("after sluice reload --admin %s: %q, want %q", admin, body, want)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if rc := waitExit(t, cmd, out); rc != 0 {
		t.Fatalf("exit %d after SIGTERM; output:\n%s", rc, out)
	}
}

// TestNoArgsServesCurrentDirectory: `sluice` alone serves the working
// directory on 127.0.0.1:8080 and says so on stderr. The port may be taken
// on a shared machine, so the test only runs when it is free.
func TestNoArgsServesCurrentDirectory(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:8080")
	if err != nil {
		t.Skip("127.0.0.1:8080 is in use")
	}
	ln.Close()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "index.html"), []byte("cwd"), 0o644)
	cmd, out := sluice(t, dir)
	if status, body := waitGet(t, "http://127.0.0.1:8080/"); status != 200 || body != "cwd" {
		t.Fatalf("%d %q", status, body)
	}
	cmd.Process.Signal(syscall.SIGINT)
	if rc := waitExit(t, cmd, out); rc != 0 {
		t.Fatalf("exit %d after SIGINT", rc)
	}
	first, _ := bufio.NewReader(strings.NewReader(out.String())).ReadString('\n')
	if !strings.Contains(first, "embedded default") || !strings.Contains(first, "127.0.0.1:8080") {
		t.Errorf("stderr does not say what it serves: %q", first)
	}
}

func TestFileServerBrowse(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("A"), 0o644)
	addr := freeAddr(t)
	cmd, out := sluice(t, dir, "file-server", "--root", dir, "--listen", addr, "--browse")
	if status, body := waitGet(t, "http://"+addr+"/"); status != 200 || !strings.Contains(body, "a.txt") {
		t.Fatalf("listing: %d %q", status, body)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if rc := waitExit(t, cmd, out); rc != 0 {
		t.Fatalf("exit %d", rc)
	}
}

func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"version"}, {"serve", "-h"}, {"validate", "-h"}, {"file-server", "-h"}, {"proxy", "-h"}, {"fmt", "-h"}, {"reload", "-h"}} {
		cmd, out := sluice(t, t.TempDir(), args...)
		if rc := waitExit(t, cmd, out); rc != 0 {
			t.Errorf("sluice %v: exit %d\n%s", args, rc, out)
		}
		if out.Len() == 0 {
			t.Errorf("sluice %v: no output", args)
		}
	}
}

// TestMakeRunPorts: make run's PORT and ADMIN land in the config it
// serves (examples/quickstart/.run.hcl), which still loads.
func TestMakeRunPorts(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	root, _ := filepath.Abs("../..")
	out := filepath.Join(root, "examples/quickstart/.run.hcl")
	t.Cleanup(func() { os.Remove(out) })
	cmd := exec.Command("make", "-s", "-C", root, "quickstart-config", "PORT=18080", "ADMIN=12019")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make quickstart-config: %v\n%s", err, b)
	}
	cfg, diags := config.Load(out)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if len(cfg.Listeners) != 1 || cfg.Listeners[0].Address != "127.0.0.1:18080" {
		t.Errorf("listeners %+v, want 127.0.0.1:18080", cfg.Listeners)
	}
	if cfg.Admin == nil || cfg.Admin.Listen != "127.0.0.1:12019" {
		t.Errorf("admin %+v, want 127.0.0.1:12019", cfg.Admin)
	}
}
