package exchange

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/host/internal/lazyconn"
	"github.com/valyala/fasthttp"
	"golang.org/x/sys/unix"
)

// TestFastCorks checks what CorkFast asks of the connection for a
// response's first write: corked for a body larger than the write
// buffer, in memory or a file (then with the head flushed alone, so that
// sendfile starts on a page), and not for a small body or HEAD. The
// connection's next write shows it: held by the kernel under TCP_CORK,
// or sent.
func TestFastCorks(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 111<<10/16)
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, big, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, method string
		send         func(x Exchange)
		cork, alone  bool
	}{
		{"file", "GET", func(x Exchange) { x.SendFile(open(t, name), 0, int64(len(big))) }, true, true},
		{"shared file", "GET", func(x Exchange) {
			fs := x.(FileAtSender)
			if !fs.SendsFiles() {
				t.Error("plain TCP under lazyconn: SendsFiles false")
			}
			f := open(t, name)
			fs.SendFileAt(f, 10, int64(len(big))-10, f)
		}, true, true},
		{"memory", "GET", func(x Exchange) { x.SetBody(big) }, true, false},
		{"small file", "GET", func(x Exchange) { x.SendFile(open(t, name), 0, 4000) }, false, false},
		{"small memory", "GET", func(x Exchange) { x.SetBody(big[:4000]) }, false, false},
		{"head", "HEAD", func(x Exchange) { x.SendFile(open(t, name), 0, int64(len(big))) }, false, false},
	} {
		t.Run(c.name, func(t *testing.T) { corkCase(t, c.method, c.send, true, c.cork, c.alone) })
		t.Run(c.name+" without tcp_nopush", func(t *testing.T) { corkCase(t, c.method, c.send, false, false, false) })
	}
}

// corkCase serves one response on a fresh connection, with CorkFast when
// nopush, and checks what the connection's next write does.
func corkCase(t *testing.T, method string, send func(Exchange), nopush, wantCork, wantAlone bool) {
	conn := lazyPair(t)
	var ctx fasthttp.RequestCtx
	ctx.Init2(conn, nil, false)
	ctx.Request.Header.SetMethod(method)
	ctx.Request.SetRequestURI("/")
	Fast(HandlerFunc(func(x Exchange) error { send(x); return nil }), nil, false)(&ctx)
	if nopush {
		CorkFast(&ctx)
	}
	defer ctx.Response.Reset()
	if ctx.Response.ImmediateHeaderFlush != wantAlone {
		t.Errorf("ImmediateHeaderFlush %v, want %v", ctx.Response.ImmediateHeaderFlush, wantAlone)
	}
	if _, err := conn.Write([]byte("head")); err != nil {
		t.Fatal(err)
	}
	var info *unix.TCPInfo
	var cork int
	rc, _ := conn.(*lazyconn.Conn).SyscallConn()
	_ = rc.Control(func(fd uintptr) {
		info, _ = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		cork, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_CORK)
	})
	if held := info.Notsent_bytes > 0; held != wantCork || (cork == 1) != wantCork {
		t.Errorf("first write held %v, TCP_CORK %d; want corked %v", held, cork, wantCork)
	}
}

func open(t *testing.T, name string) *os.File {
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// lazyPair returns the server side of a loopback connection, wrapped.
func lazyPair(t *testing.T) net.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := lazyconn.Listener{Listener: ln}.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); peer.Close() })
	return c
}
