//go:build conformance

package upgrade_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

const staticConfig = `admin {
  listen = %q
}

server {
  shutdown_timeout = "5m"
}

site "localhost" {
  aliases = ["127.0.0.1"]
  listen  = [%q]

  route "/ws" {
    proxy {
      upstreams = [%q]
    }
  }

  route "/api/" {
    proxy {
      upstreams = [%[3]q]
    }
  }

  route "/" {
    static {
      root = "./public"
    }
  }
}
`

// setup writes a config serving public/index.html ("hello\n") and
// proxying /ws and /api/ to upstream, and installs the binary, in a new folder.
func setup(t *testing.T, upstream string) (dir, bin, admin, site string) {
	dir = t.TempDir()
	admin, site = freeAddr(t), freeAddr(t)
	writeFile(t, filepath.Join(dir, "public", "index.html"), "hello\n")
	writeFile(t, filepath.Join(dir, "sluice.hcl"), fmt.Sprintf(staticConfig, admin, site, upstream))
	return dir, sluiceBin(t, dir), admin, site
}

func echoUpstream(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle("/ws", websocket.Handler(func(c *websocket.Conn) { _, _ = io.Copy(c, c) }))
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "pong\n") })
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// TestUpgradeUnderLoad replaces the binary five times in a row (by the
// admin API and by SIGUSR2, alternately) while keep-alive clients send
// requests without pause and a WebSocket is open. No request may fail.
// The WebSocket stays on the process it was opened on, which drains
// with a deadline (server.shutdown_timeout, 5m) longer than the test:
// "alive" means it still echoes after the fifth upgrade, with that
// first process still running, and that process exits once the
// WebSocket closes. The processes in between exit as soon as their
// keep-alive connections are closed.
//
// The clients are net/http's: like browsers, they send a request again
// on a new connection when a reused keep-alive connection is closed
// before any byte of the answer (RFC 9112, section 9.3.1), which is
// what a draining server does to idle connections.
func TestUpgradeUnderLoad(t *testing.T) {
	up := echoUpstream(t)
	dir, bin, admin, site := setup(t, up.URL)
	s := startSluice(t, dir, bin, admin, nil, nil)
	first := s.pid()

	ws, err := websocket.Dial("ws://"+site+"/ws", "", "http://"+site+"/")
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	echo := func(msg string) error {
		_ = ws.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := ws.Write([]byte(msg)); err != nil {
			return err
		}
		buf := make([]byte, len(msg))
		if _, err := io.ReadFull(ws, buf); err != nil {
			return err
		}
		if string(buf) != msg {
			return fmt.Errorf("echo %q, want %q", buf, msg)
		}
		return nil
	}
	if err := echo("before"); err != nil {
		t.Fatal(err)
	}

	var ok, failed atomic.Int64
	var errMu sync.Mutex
	var errs []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer c.CloseIdleConnections()
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := c.Get("http://" + site + "/index.html")
				if err == nil {
					var b []byte
					b, err = io.ReadAll(resp.Body)
					resp.Body.Close()
					if err == nil && (resp.StatusCode != 200 || string(b) != "hello\n") {
						err = fmt.Errorf("%s %q", resp.Status, b)
					}
				}
				if err != nil {
					failed.Add(1)
					errMu.Lock()
					if len(errs) < 5 {
						errs = append(errs, err.Error())
					}
					errMu.Unlock()
					continue
				}
				ok.Add(1)
			}
		})
	}

	pids := []int{first}
	for i := range 5 {
		time.Sleep(300 * time.Millisecond) // traffic on this process first
		before := ok.Load()
		old := s.pid()
		if i%2 == 0 {
			if rc, out := s.upgrade("--admin", admin); rc != 0 {
				t.Fatalf("upgrade %d: exit %d: %s", i+1, rc, out)
			}
		} else if rc, out := s.upgrade("--pid-file", s.pidFile); rc != 0 {
			t.Fatalf("upgrade %d (SIGUSR2): exit %d: %s", i+1, rc, out)
		}
		if !waitFor(30*time.Second, func() bool { p := s.pid(); return p != old && alive(p) && s.ready() }) {
			t.Fatalf("upgrade %d: the pid file still names %d", i+1, old)
		}
		pids = append(pids, s.pid())
		if err := echo(fmt.Sprintf("after upgrade %d", i+1)); err != nil {
			t.Fatalf("websocket after upgrade %d: %v", i+1, err)
		}
		t.Logf("upgrade %d: pid %d → %d; %d requests meanwhile", i+1, old, s.pid(), ok.Load()-before)
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	t.Logf("%d requests, %d failed", ok.Load(), failed.Load())
	if failed.Load() != 0 {
		t.Errorf("%d requests failed, e.g. %q", failed.Load(), errs)
	}
	if ok.Load() < 50 {
		t.Errorf("only %d requests went through", ok.Load())
	}

	// The WebSocket is alive, on the first process, still draining.
	if err := echo("after five upgrades"); err != nil {
		t.Fatalf("websocket: %v", err)
	}
	select {
	case <-s.exited:
		t.Fatal("the first process exited while its WebSocket was open")
	default:
	}
	for _, p := range pids[1 : len(pids)-1] {
		if !waitFor(20*time.Second, func() bool { return !alive(p) }) {
			t.Errorf("pid %d (replaced, no long-lived connection) still runs", p)
		}
	}
	ws.Close()
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		t.Error("the first process did not exit once its WebSocket closed")
	}
	last := pids[len(pids)-1]
	if !alive(last) || !s.ready() {
		t.Fatalf("the last process %d does not serve", last)
	}
	resp, err := http.Get("http://" + site + "/index.html")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("after the upgrades: %v %v", resp, err)
	}
	resp.Body.Close()
}

// TestUpgradeUnderWrk upgrades five times in a row under wrk's
// keep-alive load (50 connections: 25 on a static route, 25 on a proxied
// one). wrk, unlike net/http's client, never sends a request again: a
// keep-alive connection closed under a request it sent is a socket
// error. So every draining process must end each connection after a
// response that says Connection: close (or after it was idle for the
// grace, which never happens under this load): 0 socket errors, 0
// non-2xx answers.
func TestUpgradeUnderWrk(t *testing.T) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		t.Skip("wrk is not installed")
	}
	up := echoUpstream(t)
	dir, bin, admin, site := setup(t, up.URL)
	s := startSluice(t, dir, bin, admin, nil, nil)

	type run struct {
		cmd *exec.Cmd
		out bytes.Buffer
	}
	var runs []*run
	for _, path := range []string{"/index.html", "/api/ping"} {
		r := &run{cmd: exec.Command(wrk, "-t1", "-c25", "-d120s", "--timeout", "5s", "http://"+site+path)}
		r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.out
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.cmd.Process.Kill() })
		runs = append(runs, r)
	}
	for i := range 5 {
		time.Sleep(500 * time.Millisecond) // load on this process first
		old := s.pid()
		if rc, out := s.upgrade("--admin", admin); rc != 0 {
			t.Fatalf("upgrade %d: exit %d: %s", i+1, rc, out)
		}
		if !waitFor(30*time.Second, func() bool { p := s.pid(); return p != old && alive(p) && s.ready() }) {
			t.Fatalf("upgrade %d: the pid file still names %d", i+1, old)
		}
	}
	time.Sleep(500 * time.Millisecond)
	for _, r := range runs {
		_ = r.cmd.Process.Signal(syscall.SIGINT) // wrk stops and reports
		done := make(chan error, 1)
		go func() { done <- r.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("wrk did not stop:\n%s", r.out.String())
		}
		out := r.out.String()
		t.Logf("%s", out)
		if !strings.Contains(out, "requests in") {
			t.Fatalf("no wrk summary:\n%s", out)
		}
		var requests int
		if m := regexp.MustCompile(`(\d+) requests in`).FindStringSubmatch(out); m != nil {
			requests, _ = strconv.Atoi(m[1])
		}
		if requests < 1000 {
			t.Errorf("only %d requests", requests)
		}
		if m := regexp.MustCompile(`Socket errors: .*`).FindString(out); m != "" {
			t.Errorf("%s: %s", r.cmd.Args[len(r.cmd.Args)-1], m)
		}
		if m := regexp.MustCompile(`Non-2xx or 3xx responses: \d+`).FindString(out); m != "" {
			t.Errorf("%s: %s", r.cmd.Args[len(r.cmd.Args)-1], m)
		}
	}
}

// TestUpgradeFailureChangesNothing installs new binaries that cannot
// take over — one exits, one refuses the config, one never becomes
// ready — and checks after each that the same process serves: the pid
// file names it, it is not draining (/readyz 200), a keep-alive
// connection opened before still answers, and no child is left. A good
// binary then upgrades, so the checks can tell a change.
func TestUpgradeFailureChangesNothing(t *testing.T) {
	dir, bin, admin, site := setup(t, "http://127.0.0.1:9")
	good := filepath.Join(dir, "sluice.good")
	install(t, bin, good)
	s := startSluice(t, dir, bin, admin, []string{"--upgrade-timeout", "3s"}, nil)
	pid := s.pid()

	conn, err := net.Dial("tcp", site)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	get := func() error { // on the one keep-alive connection
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(conn, "GET /index.html HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil && (resp.StatusCode != 200 || string(b) != "hello\n" || resp.Close) {
			err = fmt.Errorf("%s %q close=%v", resp.Status, b, resp.Close)
		}
		return err
	}
	if err := get(); err != nil {
		t.Fatal(err)
	}
	config, err := os.ReadFile(filepath.Join(dir, "sluice.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	script := func(body string) func() {
		return func() {
			writeFile(t, bin+".new", "#!/bin/sh\n"+body+"\n")
			_ = os.Chmod(bin+".new", 0o755)
			_ = os.Rename(bin+".new", bin)
		}
	}
	cases := []struct {
		name    string
		install func()
		args    []string
		want    string // in the output of sluice upgrade ("" for SIGUSR2)
	}{
		{"exits", script(`echo "new binary: cannot start" >&2; exit 3`), []string{"--admin", admin}, "exited before it was ready: exit status 3"},
		{"bad config", func() {
			install(t, good, bin)
			writeFile(t, filepath.Join(dir, "sluice.hcl"), string(config)+"\nbogus {\n")
		}, []string{"--admin", admin}, "sluice.hcl:"},
		{"never ready", script(`exec sleep 60`), []string{"--admin", admin}, "was not ready in time"},
		{"never ready, SIGUSR2", script(`exec sleep 60`), []string{"--pid-file", s.pidFile}, ""},
	}
	for _, c := range cases {
		c.install()
		start := time.Now()
		rc, out := s.upgrade(c.args...)
		if c.want != "" && (rc == 0 || !strings.Contains(out, c.want)) {
			t.Errorf("%s: sluice upgrade: exit %d, %q; want a failure with %q", c.name, rc, out, c.want)
		}
		if c.want == "" { // SIGUSR2: the outcome is in the log
			if !waitFor(20*time.Second, func() bool {
				b, _ := os.ReadFile(filepath.Join(dir, "log"))
				return strings.Count(string(b), "upgrade failed; this process keeps serving") == 4
			}) {
				t.Errorf("%s: no failure logged", c.name)
			}
		}
		t.Logf("%s: failed in %v: %s", c.name, time.Since(start).Round(time.Millisecond), strings.TrimSpace(out))
		if p := s.pid(); p != pid || !alive(pid) {
			t.Fatalf("%s: the pid file names %d (alive %v), want %d", c.name, p, alive(pid), pid)
		}
		if !s.ready() {
			t.Errorf("%s: /readyz is not 200: the old process drains", c.name)
		}
		if err := get(); err != nil {
			t.Fatalf("%s: the keep-alive connection to the old process: %v", c.name, err)
		}
		if !waitFor(5*time.Second, func() bool { return len(children(pid)) == 0 }) {
			t.Errorf("%s: the failed binary is still running: %v", c.name, children(pid))
		}
	}

	install(t, good, bin)
	writeFile(t, filepath.Join(dir, "sluice.hcl"), string(config))
	if rc, out := s.upgrade("--admin", admin); rc != 0 {
		t.Fatalf("good binary: exit %d: %s", rc, out)
	}
	if !waitFor(10*time.Second, func() bool { return s.pid() != pid }) {
		t.Fatal("a good binary did not take over")
	}
	if err := get(); err == nil {
		// The old process closes idle keep-alive connections as it drains.
		if err := get(); err == nil {
			t.Error("the keep-alive connection still answers after a good upgrade")
		}
	}
}
