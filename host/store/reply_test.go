package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// FakeServer is a Redis that answers HELLO as a server without it does
// (RESP2) and every other command with reply, for tests that need a
// server misbehaving. Its Addr is on 127.0.0.1.
type fakeServer struct {
	ln    net.Listener
	reply func() []byte
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func newFakeServer(t testing.TB, reply func() []byte) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{ln: ln, reply: reply}
	f.wg.Go(f.serve)
	t.Cleanup(func() {
		ln.Close()
		f.mu.Lock()
		for _, c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return f
}

func (f *fakeServer) Addr() string { return f.ln.Addr().String() }

func (f *fakeServer) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns = append(f.conns, c)
		f.mu.Unlock()
		f.wg.Go(func() {
			defer c.Close()
			// A client gone for 5 s ends the connection: no goroutine
			// outlives a test for long.
			c.SetDeadline(time.Now().Add(5 * time.Second))
			r := bufio.NewReader(c)
			for {
				cmd, err := readCommand(r)
				if err != nil {
					return
				}
				out := []byte("-ERR unknown command\r\n")
				if !strings.EqualFold(cmd, "hello") {
					out = f.reply()
				}
				if _, err := c.Write(out); err != nil {
					return
				}
			}
		})
	}
}

// readCommand reads one client command (an array of bulk strings) and
// returns its name.
func readCommand(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil || n < 1 || n > 64 {
		return "", fmt.Errorf("command header %q", line)
	}
	var name string
	for i := range n {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		l, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
		if err != nil || l < 0 || l > 1<<20 {
			return "", fmt.Errorf("argument header %q", line)
		}
		b := make([]byte, l+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return "", err
		}
		if i == 0 {
			name = string(b[:l])
		}
	}
	return name, nil
}

// TestReplyBound: a server that answers with a huge declared length, a
// huge array, deep nesting, an endless line or garbage makes the call
// fail as a store error at once, and sluice allocates about nothing for
// it (before the bound, `$1999999999` cost 2 GB a call).
func TestReplyBound(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		ok    bool
	}{
		{"a good reply", "*2\r\n:1\r\n:0\r\n", true},
		{"a huge string", "$1999999999\r\n", false},
		{"a huge array", "*1999999999\r\n", false},
		{"a string just over the bound", "$" + strconv.Itoa(maxReply) + "\r\n" + strings.Repeat("x", maxReply) + "\r\n", false},
		{"an array of strings over the bound", "*2\r\n$40000\r\n" + strings.Repeat("x", 40000) + "\r\n$40000\r\n" + strings.Repeat("x", 40000) + "\r\n", false},
		{"deep nesting", strings.Repeat("*1\r\n", 100000) + ":1\r\n", false},
		{"a line with no end", "+" + strings.Repeat("a", 1<<20), false},
		{"garbage", "HTTP/1.1 400 Bad Request\r\n\r\n", false},
		{"a negative length", "$-5\r\n", false},
		{"a length that is no number", "$12a\r\n", false},
		{"a line ending in LF alone", "*2\n:1\n:0\n", false},
		{"a RESP3 map", "%1\r\n+a\r\n:1\r\n", false},
		{"a RESP3 attribute", "|1\r\n+a\r\n+b\r\n*2\r\n:1\r\n:0\r\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeServer(t, func() []byte { return []byte(tt.reply) })
			s, err := Open(Options{Address: f.Addr(), Prefix: t.Name() + ":", Timeout: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			for range 2 {
				_, _, err = s.Take(context.Background(), "k", 1, 1, 1)
			}
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			if tt.ok {
				if err != nil {
					t.Fatalf("take: %v", err)
				}
				return
			}
			if d := after.TotalAlloc - before.TotalAlloc; d > 16<<20 {
				t.Fatalf("two calls allocated %d MiB", d>>20)
			}
			if !errors.Is(err, errReply) {
				t.Fatalf("take: %v, want the reply refused", err)
			}
			// Refused as it arrives, not at the deadline.
			if took > 300*time.Millisecond {
				t.Fatalf("two refused calls took %v", took)
			}
		})
	}
}

// TestPutOverMaxBlob: what Get could not read back is not written.
func TestPutOverMaxBlob(t *testing.T) {
	s, m := newStore(t)
	ctx := context.Background()
	if err := s.Put(ctx, "big", make([]byte, MaxBlob+1)); err == nil {
		t.Fatal("put of a blob over MaxBlob succeeded")
	}
	if m.Exists(t.Name() + ":big") {
		t.Fatal("the blob over MaxBlob was stored")
	}
	if err := s.Put(ctx, "max", make([]byte, MaxBlob)); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Get(ctx, "max"); err != nil || len(b) != MaxBlob {
		t.Fatalf("get of a MaxBlob blob: %d bytes, %v", len(b), err)
	}
}

// TestScannerChunks: a reply split anywhere is framed the same as whole.
func TestScannerChunks(t *testing.T) {
	replies := []string{
		"*2\r\n:1\r\n:0\r\n",
		"$5\r\nhello\r\n",
		"*3\r\n$-1\r\n*-1\r\n*0\r\n",
		"-ERR x\r\n",
		"*1\r\n*1\r\n$2\r\nab\r\n",
	}
	stream := strings.Join(replies, "")
	for size := 1; size <= len(stream); size++ {
		s := replyScanner{lim: defaultLimits}
		for i := 0; i < len(stream); i += size {
			p := []byte(stream[i:min(i+size, len(stream))])
			if k := s.scan(p); k != len(p) || s.err != nil {
				t.Fatalf("chunks of %d: refused at %d: %v", size, i+k, s.err)
			}
		}
		if s.used != 0 || len(s.open) != 0 || s.skip != 0 || s.in {
			t.Fatalf("chunks of %d: the stream did not end on a reply's end: %+v", size, s)
		}
	}
}
