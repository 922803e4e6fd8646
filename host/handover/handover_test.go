package handover

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The tests run this test binary again as the process that receives the
// sockets; helperEnv says which part it plays.
const helperEnv = "HANDOVER_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

func helper(mode string) int {
	if mode == "hang" { // a binary that never takes its sockets
		time.Sleep(30 * time.Second)
		return 0
	}
	s, err := FromEnv()
	if err != nil {
		fmt.Println("FromEnv:", err)
		return 2
	}
	switch mode {
	case "ready": // serve the handed-over listener: answer one connection
		ln, ok := s.Listener("tcp", "configured:80")
		if !ok || !s.Upgrade {
			fmt.Println("no listener", ok, s.Upgrade)
			return 3
		}
		if err := s.Ready(); err != nil {
			return 4
		}
		_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(20 * time.Second))
		c, err := ln.Accept()
		if err != nil {
			return 5
		}
		fmt.Fprintf(c, "child %d\n", os.Getpid())
		c.Close()
		return 0
	case "fail":
		_ = s.Failed(errors.New("sluice.hcl:1:1: bad config\n  the source line"))
		return 1
	case "activation": // print what systemd's sockets matched
		addr := os.Getenv("WANT_ADDR")
		_, tcp := s.Listener("tcp", addr)
		_, udp := s.PacketConn(addr)
		_, other := s.Listener("tcp", "127.0.0.1:1")
		fmt.Printf("tcp=%v udp=%v other=%v upgrade=%v env=%q unused=%d\n", tcp, udp, other, s.Upgrade, os.Getenv(fdsEnv), len(s.CloseUnused()))
		return 0
	}
	return 9
}

func helperArgs() []string { return []string{"-test.run=^$"} }

func listen(t *testing.T) *net.TCPListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.(*net.TCPListener)
}

func dup(t *testing.T, c syscall.Conn, name string) File {
	t.Helper()
	f, err := Dup(c, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.File.Close() })
	return f
}

// TestStartHandsOver: the new process takes the listener by its name,
// says it is ready, and then answers on the same socket; this process's
// listener stays non-blocking (its accept can be closed).
func TestStartHandsOver(t *testing.T) {
	ln := listen(t)
	t.Setenv(helperEnv, "ready")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := Start(ctx, os.Args[0], helperArgs(), []File{dup(t, ln, Name("tcp", "configured:80"))})
	if err != nil {
		t.Fatal(err)
	}
	// Retire: this process stops accepting; the socket lives on in the child.
	accepting := make(chan error, 1)
	go func() { _, err := ln.Accept(); accepting <- err }()
	time.Sleep(20 * time.Millisecond)
	ln.Close()
	select {
	case <-accepting:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a pending Accept: the socket was left blocking")
	}
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if want := fmt.Sprintf("child %d\n", p.Pid); line != want {
		t.Fatalf("answer %q, %v; want %q", line, err, want)
	}
	select {
	case <-p.Exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the new process did not exit")
	}
}

// TestStartFails: a new process that exits, or is not ready in time, is
// an error naming why, and this process's socket still serves.
func TestStartFails(t *testing.T) {
	cases := []struct {
		mode, want string
		timeout    time.Duration
	}{
		{"fail", "exited before it was ready: exit status 1: sluice.hcl:1:1: bad config", 20 * time.Second},
		{"hang", "was not ready in time", 300 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			ln := listen(t)
			t.Setenv(helperEnv, c.mode)
			ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
			defer cancel()
			start := time.Now()
			p, err := Start(ctx, os.Args[0], helperArgs(), []File{dup(t, ln, Name("tcp", "configured:80"))})
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "source line") {
				t.Fatalf("Start = %v, %v; want an error with %q", p, err, c.want)
			}
			if d := time.Since(start); d > 15*time.Second {
				t.Errorf("Start took %v", d)
			}
			go func() {
				if c, err := ln.Accept(); err == nil {
					c.Write([]byte("old\n"))
					c.Close()
				}
			}()
			conn, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			if line, err := bufio.NewReader(conn).ReadString('\n'); line != "old\n" {
				t.Fatalf("after a failed start: %q, %v", line, err)
			}
			// The socket is still non-blocking, so a close ends a pending
			// Accept (os/exec's Fd on a net File would clear the flag,
			// which the socket shares with every copy).
			if nonblocking(t, ln) != true {
				t.Error("the handed-over socket was left blocking")
			}
		})
	}
	if _, err := Start(context.Background(), filepath.Join(t.TempDir(), "missing"), nil, nil); err == nil {
		t.Error("Start of a missing binary succeeded")
	}
}

// TestSocketActivation passes a TCP and a UDP socket the way systemd
// does (LISTEN_PID is the pid that exec keeps) and checks they are
// matched to the configured address by what they are bound to.
func TestSocketActivation(t *testing.T) {
	ln := listen(t)
	pc, err := net.ListenPacket("udp", ln.Addr().String())
	if err != nil {
		t.Skip("no UDP on the TCP port:", err)
	}
	defer pc.Close()
	for _, c := range []struct{ pid, want string }{
		{"$$", "tcp=true udp=true other=false upgrade=false env=\"\" unused=0"},
		{"1", "tcp=false udp=false other=false upgrade=false env=\"\" unused=0"}, // for another process
	} {
		// "sluice.socket" is systemd's default name for the first.
		cmd := exec.Command("sh", "-c", `LISTEN_PID=`+c.pid+` LISTEN_FDS=2 LISTEN_FDNAMES=sluice.socket:web-h3 exec "$0" "$@"`, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"=activation", "WANT_ADDR="+ln.Addr().String())
		cmd.ExtraFiles = []*os.File{dup(t, ln, "sluice.socket").File, dup(t, pc.(*net.UDPConn), "web-h3").File}
		out, err := cmd.Output()
		if got := strings.TrimSpace(string(out)); err != nil || got != c.want {
			t.Errorf("LISTEN_PID=%s: %q, %v; want %q", c.pid, got, err, c.want)
		}
	}
}

func TestMatches(t *testing.T) {
	tcp := func(ip string, port int) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: port} }
	cases := []struct {
		addr  string
		bound net.Addr
		want  bool
	}{
		{":8080", tcp("::", 8080), true},
		{":8080", tcp("0.0.0.0", 8080), true},
		{":8080", tcp("127.0.0.1", 8080), false},
		{"0.0.0.0:8080", tcp("::", 8080), true},
		{"127.0.0.1:8080", tcp("127.0.0.1", 8080), true},
		{"127.0.0.1:8080", tcp("127.0.0.1", 8081), false},
		{"127.0.0.1:8080", tcp("127.0.0.2", 8080), false},
		{"[::1]:443", tcp("::1", 443), true},
		{"localhost:443", tcp("127.0.0.1", 443), true},
		{"127.0.0.1:https", tcp("127.0.0.1", 443), true},
		{"127.0.0.1:0", tcp("127.0.0.1", 0), false},
		{"127.0.0.1:443", &net.UDPAddr{IP: net.ParseIP("127.0.0.1"), Port: 443}, true},
		{"127.0.0.1:443", &net.UnixAddr{Name: "/run/x"}, false},
		{"no-port", tcp("127.0.0.1", 443), false},
	}
	for _, c := range cases {
		if got := Matches(c.addr, c.bound); got != c.want {
			t.Errorf("Matches(%q, %v) = %v, want %v", c.addr, c.bound, got, c.want)
		}
	}
}

func TestName(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:80", "[::1]:8443", ":443"} {
		n := Name("tcp", addr)
		if strings.Contains(n, ":") || !strings.HasPrefix(n, namePrefix) {
			t.Errorf("Name(tcp, %q) = %q: a LISTEN_FDNAMES entry holds no ':'", addr, n)
		}
	}
	if Name("tcp", "a:1") == Name("udp", "a:1") || Name("tcp", "a:1") == Name("tcp", "a:2") {
		t.Error("names collide")
	}
}

// TestFromEnvForAnotherProcess: sockets meant for another pid are not
// taken (their descriptors are not ours), and the variables go.
func TestFromEnvForAnotherProcess(t *testing.T) {
	t.Setenv(fdsEnv, "1")
	t.Setenv(pidEnv, "1")
	s, err := FromEnv()
	if err != nil || len(s.socks) != 0 || s.Upgrade {
		t.Fatalf("FromEnv = %+v, %v", s, err)
	}
	if _, ok := os.LookupEnv(fdsEnv); ok {
		t.Error("LISTEN_FDS left in the environment")
	}
	var none *Sockets
	if _, ok := none.Listener("tcp", ":80"); ok || none.Ready() != nil || none.CloseUnused() != nil {
		t.Error("nil Sockets is not empty")
	}
}

func TestNotify(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "notify")
	for _, name := range []string{path, "@sluice-test-" + filepath.Base(dir)} {
		addr := name
		if addr[0] == '@' {
			addr = "\x00" + addr[1:]
		}
		c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		t.Setenv(NotifyEnv, name)
		if sent, err := Notify("READY=1"); !sent || err != nil {
			t.Fatalf("Notify to %q: %v, %v", name, sent, err)
		}
		buf := make([]byte, 256)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := c.Read(buf)
		if err != nil || string(buf[:n]) != "READY=1" {
			t.Fatalf("received %q, %v", buf[:n], err)
		}
	}
	t.Setenv(NotifyEnv, "")
	if sent, err := Notify("READY=1"); sent || err != nil {
		t.Errorf("without NOTIFY_SOCKET: %v, %v", sent, err)
	}
	if r := Reloading(); !strings.HasPrefix(r, "RELOADING=1\nMONOTONIC_USEC=") || strings.HasSuffix(r, "=0") {
		t.Errorf("Reloading() = %q", r)
	}
}

func nonblocking(t *testing.T, c syscall.Conn) bool {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	_ = rc.Control(func(fd uintptr) { flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0) })
	if err != nil {
		t.Fatal(err)
	}
	return flags&unix.O_NONBLOCK != 0
}
