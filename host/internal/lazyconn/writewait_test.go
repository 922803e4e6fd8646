package lazyconn

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/internal/sockpeek"
)

// TestWriteWaitAnswered: WriteWait sends the request and returns once
// the answer is there to read.
func TestWriteWaitAnswered(t *testing.T) {
	c, peer := pair(t)
	go func() {
		buf := make([]byte, 4)
		if _, err := io.ReadFull(peer, buf); err != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
		peer.Write([]byte("pong"))
	}()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	if err := c.WriteWait([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 40*time.Millisecond {
		t.Fatalf("returned after %v, before the answer", took)
	}
	if s, _ := sockpeek.Look(c); s != sockpeek.Data {
		t.Fatalf("socket %v after WriteWait, want data", s)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "pong" {
		t.Fatalf("read %q, %v", buf, err)
	}
}

// TestWriteWaitDeadline: a wait that outlasts the read deadline returns
// without error; the read after it meets the deadline.
func TestWriteWaitDeadline(t *testing.T) {
	c, peer := pair(t)
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if err := c.WriteWait([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(peer, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("peer read %q, %v", buf, err)
	}
	if _, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after the wait: %v, want a timeout", err)
	}
}

// TestWriteWaitFull: a request larger than the socket takes at once is
// written whole the usual way.
func TestWriteWaitFull(t *testing.T) {
	c, peer := pair(t)
	c.SetWriteBuffer(16 << 10)
	payload := make([]byte, 2<<20)
	for i := range payload {
		payload[i] = byte(i)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(peer)
		got <- b
	}()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := c.WriteWait(payload); err != nil {
		t.Fatal(err)
	}
	c.CloseWrite()
	if b := <-got; len(b) != len(payload) || string(b[:1000]) != string(payload[:1000]) || string(b[len(b)-1000:]) != string(payload[len(payload)-1000:]) {
		t.Fatalf("peer got %d bytes, want %d", len(b), len(payload))
	}
}

// TestWriteWaitBrokenPipe: a write to a connection the peer reset fails.
func TestWriteWaitBrokenPipe(t *testing.T) {
	c, peer := pair(t)
	peer.(*net.TCPConn).SetLinger(0)
	peer.Close()
	time.Sleep(20 * time.Millisecond)
	c.SetDeadline(time.Now().Add(2 * time.Second))
	var err error
	for range 3 { // the first write may be taken before the reset is seen
		if err = c.WriteWait([]byte("ping")); err != nil {
			break
		}
	}
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "write" {
		t.Fatalf("WriteWait to a reset connection: %v, want a write error", err)
	}
}

func BenchmarkWriteWait(b *testing.B) {
	c, peer := pair(b)
	go func() {
		buf := make([]byte, 64)
		for {
			if _, err := io.ReadFull(peer, buf[:4]); err != nil {
				return
			}
			peer.Write(buf[:4])
		}
	}()
	buf, ping := make([]byte, 4), []byte("ping")
	b.ReportAllocs()
	for b.Loop() {
		if err := c.WriteWait(ping); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
}
