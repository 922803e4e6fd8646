package lazyconn

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// region is a FileRegion for the tests, reading at its own offset.
type region struct {
	f      *os.File
	off, n int64
}

func (r *region) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.n)]
	n, err := r.f.ReadAt(p, r.off)
	r.Advance(int64(n))
	return n, err
}
func (r *region) Region() (*os.File, int64, int64) { return r.f, r.off, r.n }
func (r *region) Advance(n int64)                  { r.off += n; r.n -= n }

func tempFile(t *testing.T, b []byte) *os.File {
	t.Helper()
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// tcpInfo returns the kernel's view of c's socket.
func tcpInfo(t *testing.T, c *Conn) (info *unix.TCPInfo, cork int) {
	t.Helper()
	var err error
	if cerr := c.sf.rc.Control(func(fd uintptr) {
		if info, err = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			cork, err = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_CORK)
		}
	}); cerr != nil {
		t.Fatal(cerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	return info, cork
}

func readN(t *testing.T, c io.Reader, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRegionAtOffset sends a FileRegion, under a LimitedReader as bufio
// and fasthttp hand it on, from its own offset: the file's offset stays
// where it was, so concurrent requests can share the descriptor.
func TestRegionAtOffset(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 20000) // 320000 B: more than a socket buffer
	f := tempFile(t, data)
	if _, err := f.Seek(7, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	c, peer := pair(t)
	_ = peer.SetDeadline(time.Now().Add(10 * time.Second))
	done := make(chan []byte)
	go func() { done <- readN(t, peer, 300000) }()
	r := &region{f: f, off: 100, n: int64(len(data)) - 100}
	lr := &io.LimitedReader{R: r, N: 300000}
	n, err := c.ReadFrom(lr)
	if err != nil || n != 300000 || lr.N != 0 || r.off != 300100 {
		t.Fatalf("ReadFrom: %d, %v; limit left %d, region at %d", n, err, lr.N, r.off)
	}
	if got := <-done; !bytes.Equal(got, data[100:300100]) {
		t.Fatal("peer got other bytes")
	}
	if off, _ := f.Seek(0, io.SeekCurrent); off != 7 {
		t.Fatalf("file offset moved to %d", off)
	}
}

// TestCorkNext checks that CorkNext holds the head (TCP_CORK set, its
// bytes not sent) until the FileRegion after it has gone out, and that
// the cork is then cleared.
func TestCorkNext(t *testing.T) {
	data := bytes.Repeat([]byte("x"), 100000)
	f := tempFile(t, data)
	c, peer := pair(t)
	_ = peer.SetDeadline(time.Now().Add(10 * time.Second))
	head := []byte("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
	c.CorkNext()
	if _, err := c.Write(head); err != nil {
		t.Fatal(err)
	}
	if info, cork := tcpInfo(t, c); cork != 1 || info.Notsent_bytes != uint32(len(head)) {
		t.Fatalf("after the head: TCP_CORK %d, %d bytes not sent, want 1, %d", cork, info.Notsent_bytes, len(head))
	}
	done := make(chan []byte)
	go func() { done <- readN(t, peer, len(head)+len(data)) }()
	if _, err := c.ReadFrom(&region{f: f, n: int64(len(data))}); err != nil {
		t.Fatal(err)
	}
	if got := <-done; !bytes.Equal(got, append(head, data...)) {
		t.Fatal("peer got other bytes")
	}
	if _, cork := tcpInfo(t, c); cork != 0 {
		t.Fatal("still corked after the file")
	}
	// The next write is a plain one again.
	if _, err := c.Write([]byte("next")); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, peer, 4); string(got) != "next" {
		t.Fatalf("got %q", got)
	}
}

// TestCorkNextOtherWrite checks that a corked connection whose next
// write is not a FileRegion is uncorked after it: nothing waits.
func TestCorkNextOtherWrite(t *testing.T) {
	c, peer := pair(t)
	_ = peer.SetDeadline(time.Now().Add(10 * time.Second))
	c.CorkNext()
	if _, err := c.Write([]byte("head")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("body")); err != nil {
		t.Fatal(err)
	}
	if info, cork := tcpInfo(t, c); cork != 0 || info.Notsent_bytes != 0 {
		t.Fatalf("TCP_CORK %d, %d bytes not sent", cork, info.Notsent_bytes)
	}
	if got := readN(t, peer, 8); string(got) != "headbody" {
		t.Fatalf("got %q", got)
	}
}

// BenchmarkSendRegion sends a 111 KiB file region per operation, corked
// head first, as the fast engine does for a cached static file.
func BenchmarkSendRegion(b *testing.B) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 111<<10/16)
	name := filepath.Join(b.TempDir(), "f")
	if err := os.WriteFile(name, data, 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	c, peer := pair(b)
	go func() { _, _ = io.Copy(io.Discard, peer) }()
	head := []byte("HTTP/1.1 200 OK\r\nContent-Length: 113664\r\n\r\n")
	r := &region{f: f}
	b.SetBytes(int64(len(head) + len(data)))
	b.ReportAllocs()
	for b.Loop() {
		c.CorkNext()
		if _, err := c.Write(head); err != nil {
			b.Fatal(err)
		}
		r.off, r.n = 0, int64(len(data))
		if _, err := c.ReadFrom(r); err != nil {
			b.Fatal(err)
		}
	}
}
