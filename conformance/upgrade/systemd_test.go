//go:build conformance

package upgrade_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// activate makes cmd start the way systemd starts a socket-activated
// service: the sockets from fd 3 on, LISTEN_FDS and LISTEN_FDNAMES, and
// LISTEN_PID set to the service's pid (sh's, which exec keeps).
func activate(cmd *exec.Cmd, names []string, files []*os.File) {
	script := fmt.Sprintf(`LISTEN_PID=$$ LISTEN_FDS=%d LISTEN_FDNAMES=%s exec "$0" "$@"`, len(files), strings.Join(names, ":"))
	cmd.Args = append([]string{"sh", "-c", script, cmd.Path}, cmd.Args[1:]...)
	cmd.Path = "/bin/sh"
	cmd.ExtraFiles = files
}

func fileOf(t *testing.T, ln net.Listener) *os.File {
	t.Helper()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestSocketActivation passes sluice its site and admin sockets as
// systemd does. A client that connects before sluice runs waits in the
// socket's queue and is answered; a socket matching no listen address is
// closed; sluice binds none of the passed addresses itself.
func TestSocketActivation(t *testing.T) {
	dir, bin, admin, site := setup(t, "http://127.0.0.1:9")
	var lns []net.Listener
	for _, a := range []string{site, admin, "127.0.0.1:0"} {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		lns = append(lns, ln)
	}
	early, err := net.Dial("tcp", site) // before sluice runs
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	if _, err := io.WriteString(early, "GET /index.html HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	files := []*os.File{fileOf(t, lns[0]), fileOf(t, lns[1]), fileOf(t, lns[2])}
	s := startSluice(t, dir, bin, admin, nil, func(cmd *exec.Cmd) {
		activate(cmd, []string{"sluice.socket", "admin", "stray"}, files)
	})
	for _, ln := range lns { // sluice holds them now
		ln.Close()
	}
	for _, f := range files {
		f.Close()
	}
	_ = early.SetDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(early), nil)
	if err != nil {
		t.Fatalf("the connection made before sluice started: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "hello\n" {
		t.Fatalf("early connection: %s %q", resp.Status, body)
	}
	if !s.ready() {
		t.Fatal("the admin API on the passed socket does not answer")
	}
	if c, err := net.DialTimeout("tcp", lns[2].Addr().String(), 2*time.Second); err == nil {
		c.Close()
		t.Error("the socket that matches no listen address is still open")
	}
	log, _ := os.ReadFile(filepath.Join(dir, "log"))
	for _, want := range []string{"inherited=true", `msg="inherited socket matches no listen address; closed" socket="stray 127.0.0.1:`} {
		if !strings.Contains(string(log), want) {
			t.Errorf("the log lacks %q", want)
		}
	}
}

// TestSdNotify runs sluice with NOTIFY_SOCKET, as systemd runs a
// Type=notify service, and reads what it reports: READY=1 (and its pid)
// once it serves, RELOADING=1 then READY=1 around a reload (SIGHUP),
// STOPPING=1 when it drains (SIGTERM).
func TestSdNotify(t *testing.T) {
	dir, bin, admin, site := setup(t, "http://127.0.0.1:9")
	path := filepath.Join(dir, "notify")
	nc, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	next := func() string {
		t.Helper()
		buf := make([]byte, 4096)
		_ = nc.SetReadDeadline(time.Now().Add(20 * time.Second))
		n, err := nc.Read(buf)
		if err != nil {
			t.Fatalf("no notification: %v", err)
		}
		return string(buf[:n])
	}
	s := startSluice(t, dir, bin, admin, nil, func(cmd *exec.Cmd) {
		cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+path)
	})
	pid := s.cmd.Process.Pid
	if got, want := next(), fmt.Sprintf("READY=1\nMAINPID=%d", pid); got != want {
		t.Fatalf("at start: %q, want %q", got, want)
	}
	if c, err := net.Dial("tcp", site); err != nil { // ready means listening
		t.Fatalf("READY=1 before the listener: %v", err)
	} else {
		c.Close()
	}
	_ = syscall.Kill(pid, syscall.SIGHUP)
	if got := next(); !regexp.MustCompile(`^RELOADING=1\nMONOTONIC_USEC=[1-9][0-9]*$`).MatchString(got) {
		t.Fatalf("at reload: %q, want RELOADING=1 and MONOTONIC_USEC", got)
	}
	if got := next(); got != "READY=1" {
		t.Fatalf("after reload: %q, want READY=1", got)
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	if got := next(); got != "STOPPING=1" {
		t.Fatalf("at SIGTERM: %q, want STOPPING=1", got)
	}
	select {
	case <-s.exited:
		if code := s.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("exit %d after SIGTERM", code)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("sluice did not exit after SIGTERM")
	}
}

// TestSystemdUnits checks the shipped units (examples/deploy/systemd)
// with systemd-analyze verify. The unit's ExecStart names the installed
// /usr/local/bin/sluice; the check points it at the binary just built,
// as verify requires the command to exist. verify exits 0 on unknown
// keys or values, so any line naming a unit fails the test.
func TestSystemdUnits(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("SLUICE_CONFORMANCE_STRICT") != "" {
			t.Fatal("systemd-analyze not found (apt-get install systemd)")
		}
		t.Skip("systemd-analyze not found (apt-get install systemd)")
	}
	dir := t.TempDir()
	bin := sluiceBin(t, dir)
	src, _ := filepath.Glob("../../examples/deploy/systemd/sluice.*")
	if len(src) != 2 {
		t.Fatalf("units: %v, want sluice.service and sluice.socket", src)
	}
	var units []string
	for _, u := range src {
		b, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(u, ".service") {
			for _, want := range []string{"\nType=notify\n", "\nExecReload=", "\nExecStart=/usr/local/bin/sluice serve "} {
				if !strings.Contains(string(b), want) {
					t.Errorf("%s lacks %q", u, strings.TrimSpace(want))
				}
			}
		}
		name := filepath.Join(dir, filepath.Base(u))
		writeFile(t, name, strings.ReplaceAll(string(b), "/usr/local/bin/sluice", bin))
		units = append(units, name)
	}
	out, err := exec.Command(analyze, append([]string{"verify", "--man=no"}, units...)...).CombinedOutput()
	var problems []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "sluice.service") || strings.Contains(line, "sluice.socket") {
			problems = append(problems, line)
		}
	}
	if err != nil || len(problems) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, strings.Join(problems, "\n"))
	}
	t.Logf("systemd-analyze verify %s: ok\n%s", strings.Join(units, " "), out)
}
