package sockpeek

import (
	"crypto/tls"
	"net"
	"testing"
	"time"
)

type wrapper struct{ net.Conn }

func (w wrapper) NetConn() net.Conn { return w.Conn }

func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// settle gives loopback a moment to deliver what the peer did.
func settle(t *testing.T, c net.Conn, not State) State {
	t.Helper()
	var s State
	for range 100 {
		if s, _ = Look(c); s != not {
			return s
		}
		time.Sleep(5 * time.Millisecond)
	}
	return s
}

func TestLook(t *testing.T) {
	for _, tc := range []struct {
		name string
		peer func(net.Conn)
		wrap func(net.Conn) net.Conn
		want State
	}{
		{"open", func(net.Conn) {}, nil, Open},
		{"data", func(p net.Conn) { p.Write([]byte("GET")) }, nil, Data},
		{"closed", func(p net.Conn) { p.Close() }, nil, Closed},
		{"half-closed", func(p net.Conn) { p.(*net.TCPConn).CloseWrite() }, nil, Closed},
		{"through a wrapper", func(p net.Conn) { p.Close() }, func(c net.Conn) net.Conn { return wrapper{c} }, Closed},
		{"through two wrappers", func(p net.Conn) { p.Write([]byte("x")) }, func(c net.Conn) net.Conn { return wrapper{wrapper{c}} }, Data},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, p := tcpPair(t)
			tc.peer(p)
			if tc.wrap != nil {
				c = tc.wrap(c)
			}
			got := Open
			if tc.want != Open {
				got = settle(t, c, Open)
			} else {
				got, _ = Look(c)
			}
			if got != tc.want {
				t.Fatalf("Look = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLookTLSAndPipe(t *testing.T) {
	c, _ := tcpPair(t)
	if s, isTLS := Look(tls.Client(c, &tls.Config{})); s != Open || !isTLS {
		t.Fatalf("Look(tls) = %v, %v; want open, true", s, isTLS)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if s, _ := Look(a); s != Unknown {
		t.Fatalf("Look(pipe) = %v, want unknown", s)
	}
}

func TestLookDoesNotConsume(t *testing.T) {
	c, p := tcpPair(t)
	p.Write([]byte("hello"))
	if s := settle(t, c, Open); s != Data {
		t.Fatalf("Look = %v, want data", s)
	}
	buf := make([]byte, 5)
	c.SetReadDeadline(time.Now().Add(time.Second))
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("read after look = %q, %v", buf[:n], err)
	}
}
