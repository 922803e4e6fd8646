//go:build conformance

package store_test

import (
	"bufio"
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
	"testing"
	"time"

	"github.com/sluicehq/sluice/conformance/internal/gotool"
)

// sluiceBin is the sluice binary TestMain builds from this checkout.
var sluiceBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-store")
	if err != nil {
		panic(err)
	}
	sluiceBin = filepath.Join(dir, "sluice")
	if err := gotool.Sluice(sluiceBin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func freePort(t testing.TB) int { return freePorts(t, 1)[0] }

// freePorts returns n distinct free loopback ports: all are held until
// the last is picked, so none is handed out twice.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// redis is a redis-server the test owns: Stop and Start keep its port.
type redis struct {
	t    testing.TB
	bin  string
	port int
	dir  string
	cmd  *exec.Cmd
	out  *strings.Builder
}

func startRedis(t testing.TB) *redis {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed (apt-get install redis-server); skipping")
	}
	r := &redis{t: t, bin: bin, port: freePort(t), dir: t.TempDir()}
	r.Start()
	t.Cleanup(r.Stop)
	return r
}

func (r *redis) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// Start runs the server, without persistence, and waits for its PONG.
func (r *redis) Start() {
	r.t.Helper()
	r.cmd = exec.Command(r.bin, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", r.dir, "--protected-mode", "no", "--daemonize", "no")
	r.out = new(strings.Builder)
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", r.Addr(), time.Second); err == nil {
			c.SetDeadline(time.Now().Add(time.Second))
			fmt.Fprint(c, "PING\r\n")
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if strings.HasPrefix(line, "+PONG") {
				return
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("redis-server did not answer on %s:\n%s", r.Addr(), r.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop kills the server (as a crash would) and waits for it.
func (r *redis) Stop() {
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Kill()
	r.cmd.Wait()
	r.cmd = nil
}

// instance is one sluice process.
type instance struct {
	url, admin string
	out        *syncBuilder
}

type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startSluice runs sluice on cfg, in which %[1]d is replaced by a free
// port for the site and %[2]d by one for the admin listener, and waits
// until the admin listener answers /readyz.
func startSluice(t testing.TB, cfg string, env ...string) *instance {
	t.Helper()
	p := freePorts(t, 2)
	return runSluice(t, fmt.Sprintf(cfg, p[0], p[1]), p[0], p[1], env...)
}

// runSluice runs sluice on the config text, whose site and admin
// listeners are on those ports.
func runSluice(t testing.TB, text string, site, admin int, env ...string) *instance {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "sluice.hcl")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sluiceBin, "serve", "-c", file)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	in := &instance{url: fmt.Sprintf("http://127.0.0.1:%d", site), admin: fmt.Sprintf("http://127.0.0.1:%d", admin), out: new(syncBuilder)}
	cmd.Stdout, cmd.Stderr = in.out, in.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("sluice %s output:\n%s", in.url, tail(in.out.String(), 4000))
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(in.admin + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return in
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("sluice did not become ready: %v\n%s", err, tail(in.out.String(), 4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// metric reads one sample of the instance's /metrics, -1 when absent.
func (in *instance) metric(t testing.TB, series string) float64 {
	t.Helper()
	resp, err := http.Get(in.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

// flush empties the server (FLUSHALL).
func (r *redis) flush(t testing.TB) {
	t.Helper()
	c, err := net.DialTimeout("tcp", r.Addr(), time.Second)
	if err != nil {
		return
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	fmt.Fprint(c, "FLUSHALL\r\n")
	bufio.NewReader(c).ReadString('\n')
}

func execCommand(bin string, args ...string) *exec.Cmd { return exec.Command(bin, args...) }
