//go:build conformance

package upgrade_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/conformance/internal/gotool"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// sluiceBin builds cmd/sluice once per run and copies it into dir, so a
// test can replace the file as an operator installing a new version does.
func sluiceBin(t *testing.T, dir string) string {
	t.Helper()
	buildOnce.Do(func() {
		out, err := os.MkdirTemp("", "sluice-upgrade-bin")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(out, "sluice")
		buildErr = gotool.Sluice(builtBin)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	bin := filepath.Join(dir, "sluice")
	install(t, builtBin, bin)
	return bin
}

// install copies src over dst by rename, as a package manager does: the
// running process keeps its (now unlinked) file.
func install(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	tmp := dst + ".new"
	if err := os.WriteFile(tmp, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
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

// server is a sluice started by a test, and every process that an
// upgrade put in its place.
type server struct {
	t       *testing.T
	dir     string
	bin     string
	cli     string // a copy of the binary for `sluice upgrade`: bin may be replaced by a broken one
	admin   string
	pidFile string
	cmd     *exec.Cmd
	exited  chan struct{}
	logf    *os.File

	mu   sync.Mutex
	pids []int // every pid seen in the pid file
}

// startSluice runs `sluice serve -c sluice.hcl --pid-file pid` in dir
// (extra arguments appended) and waits until it serves: the pid file
// exists and admin /readyz answers 200. Every process it ever had is
// killed when the test ends.
func startSluice(t *testing.T, dir, bin, admin string, extra []string, prepare func(*exec.Cmd)) *server {
	t.Helper()
	s := &server{t: t, dir: dir, bin: bin, cli: bin + ".cli", admin: admin, pidFile: filepath.Join(dir, "pid"), exited: make(chan struct{})}
	install(t, bin, s.cli)
	var err error
	if s.logf, err = os.Create(filepath.Join(dir, "log")); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"serve", "-c", "sluice.hcl", "--pid-file", s.pidFile}, extra...)
	s.cmd = exec.Command(bin, args...)
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = s.logf, s.logf
	if prepare != nil {
		prepare(s.cmd)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		s.mu.Lock()
		pids := append([]int{s.cmd.Process.Pid}, s.pids...)
		s.mu.Unlock()
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Logf("sluice log:\n%s", tail(b, 8000))
		}
		s.logf.Close()
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if s.pid() == s.cmd.Process.Pid && s.ready() {
			return s
		}
		select {
		case <-s.exited:
			b, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Fatalf("sluice exited at start:\n%s", b)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("sluice not ready in 30s")
		}
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// pid reads the pid file (0 when absent) and remembers the pid.
func (s *server) pid() int {
	b, err := os.ReadFile(s.pidFile)
	if err != nil {
		return 0
	}
	p, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if p > 0 {
		s.mu.Lock()
		found := false
		for _, q := range s.pids {
			found = found || q == p
		}
		if !found {
			s.pids = append(s.pids, p)
		}
		s.mu.Unlock()
	}
	return p
}

// ready reports whether the admin API answers /readyz with 200 (not
// draining).
func (s *server) ready() bool {
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + s.admin + "/readyz")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

// upgrade runs `sluice upgrade` with args and returns its exit status
// and output.
func (s *server) upgrade(args ...string) (int, string) {
	cmd := exec.Command(s.cli, append([]string{"upgrade"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return 0, out.String()
}

// alive reports whether pid runs (and is not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) S ...: the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// children returns the live processes whose parent is pid.
func children(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) && f[0] != "Z" {
			out = append(out, p)
		}
	}
	return out
}

// waitFor polls cond every 20ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
