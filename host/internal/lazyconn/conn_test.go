package lazyconn

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// pair returns a wrapped server-side connection and its raw client peer.
func pair(t testing.TB) (*Conn, net.Conn) {
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
	c, err := Listener{ln}.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); peer.Close() })
	return c.(*Conn), peer
}

func TestUpdate(t *testing.T) {
	for _, tc := range []struct {
		name        string
		armed, want int64
		apply       bool
		armedAfter  int64
	}{
		{"first deadline", 0, 100, true, 100},
		{"same", 100, 100, false, 100},
		{"later waits for the armed one", 100, 200, false, 100},
		{"earlier moves the timer", 200, 100, true, 100},
		{"cleared waits for the armed one", 100, 0, false, 100},
		{"none to none", 0, 0, false, 0},
		{"past interrupts at once", 200, 1, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := deadline{armed: tc.armed}
			if got := d.update(tc.want); got != tc.apply || d.armed != tc.armedAfter || d.want != tc.want {
				t.Fatalf("update(%d) from armed %d = %v, armed %d, want %d; expected %v, armed %d",
					tc.want, tc.armed, got, d.armed, d.want, tc.apply, tc.armedAfter)
			}
		})
	}
}

// TestReadDeadlines drives a wrapped connection through deadline changes
// and checks each read ends as a plain connection's would.
func TestReadDeadlines(t *testing.T) {
	for _, tc := range []struct {
		name    string
		set     func(c *Conn) // deadline calls before the read
		sendAt  time.Duration // when the peer sends a byte; 0 never
		timeout bool          // the read must time out
		within  time.Duration // ... no later than this
	}{
		{"extended deadline does not fire early", func(c *Conn) {
			c.SetReadDeadline(time.Now().Add(40 * time.Millisecond))
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
		}, 150 * time.Millisecond, false, 0},
		{"cleared deadline does not fire", func(c *Conn) {
			c.SetReadDeadline(time.Now().Add(40 * time.Millisecond))
			c.SetReadDeadline(time.Time{})
		}, 150 * time.Millisecond, false, 0},
		{"shortened deadline fires", func(c *Conn) {
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		}, 0, true, 2 * time.Second},
		{"extended deadline fires when it comes", func(c *Conn) {
			c.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
			c.SetReadDeadline(time.Now().Add(120 * time.Millisecond))
		}, 0, true, 2 * time.Second},
		{"SetDeadline covers reads", func(c *Conn) {
			c.SetDeadline(time.Now().Add(30 * time.Millisecond))
			c.SetDeadline(time.Now().Add(2 * time.Second))
		}, 150 * time.Millisecond, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, peer := pair(t)
			if tc.sendAt > 0 {
				timer := time.AfterFunc(tc.sendAt, func() { peer.Write([]byte{'x'}) })
				defer timer.Stop()
			}
			start := time.Now()
			tc.set(c)
			var b [1]byte
			n, err := c.Read(b[:])
			took := time.Since(start)
			if tc.timeout {
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("read = %d, %v; want a timeout", n, err)
				}
				var ne net.Error
				if !errors.As(err, &ne) || !ne.Timeout() {
					t.Fatalf("error %v is not a net.Error timeout", err)
				}
				if took > tc.within {
					t.Fatalf("timed out after %v, want within %v", took, tc.within)
				}
				return
			}
			if err != nil || n != 1 {
				t.Fatalf("read = %d, %v after %v; want the peer's byte", n, err, took)
			}
		})
	}
}

// TestExtendedDeadlineNotBeforeWanted checks a timeout never surfaces
// before the deadline the caller set last.
func TestExtendedDeadlineNotBeforeWanted(t *testing.T) {
	c, _ := pair(t)
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	want := time.Now().Add(100 * time.Millisecond)
	c.SetReadDeadline(want)
	var b [1]byte
	_, err := c.Read(b[:])
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read error %v, want a timeout", err)
	}
	if now := time.Now(); now.Before(want) {
		t.Fatalf("timed out %v before the deadline", want.Sub(now))
	}
}

// TestInterrupt is how servers stop a blocked read: a deadline in the
// past, set from another goroutine.
func TestInterrupt(t *testing.T) {
	c, _ := pair(t)
	c.SetReadDeadline(time.Now().Add(time.Hour))
	done := make(chan error, 1)
	go func() {
		var b [1]byte
		_, err := c.Read(b[:])
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	c.SetReadDeadline(time.Unix(1, 0))
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read error %v, want a timeout", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("read not interrupted")
	}
}

// TestWriteRearms fills the socket so that a write blocks past an early
// armed deadline, then lets the peer drain it.
func TestWriteRearms(t *testing.T) {
	c, peer := pair(t)
	c.SetWriteBuffer(16 << 10)
	c.SetWriteDeadline(time.Now().Add(30 * time.Millisecond))
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	payload := make([]byte, 2<<20)
	got := make(chan int64, 1)
	go func() {
		time.Sleep(150 * time.Millisecond)
		n, _ := io.Copy(io.Discard, peer)
		got <- n
	}()
	n, err := c.Write(payload)
	if err != nil || n != len(payload) {
		t.Fatalf("write = %d, %v; want %d, nil", n, err, len(payload))
	}
	c.CloseWrite()
	if n := <-got; n != int64(len(payload)) {
		t.Fatalf("peer read %d bytes, want %d", n, len(payload))
	}
}

func TestWrapOthers(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if Wrap(a) != a {
		t.Fatal("a non-TCP connection was wrapped")
	}
}

// BenchmarkDeadlines is one keep-alive request's deadlines as fasthttp
// sets them: idle, read, write.
func BenchmarkDeadlines(b *testing.B) {
	c, _ := pair(b)
	for _, bc := range []struct {
		name string
		conn net.Conn
	}{{"tcp", c.TCPConn}, {"lazy", c}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				now := time.Now()
				bc.conn.SetReadDeadline(now.Add(120 * time.Second))
				bc.conn.SetReadDeadline(now.Add(60 * time.Second))
				bc.conn.SetWriteDeadline(now.Add(60 * time.Second))
			}
		})
	}
}
