package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// memConn is a server in memory: it answers the client's first write
// (HELLO) as a RESP2-only server does and its second with the bytes
// under test, chunk bytes per read, then EOF.
type memConn struct {
	queue  []byte
	reply  []byte
	chunk  int
	writes int
}

func (c *memConn) Write(p []byte) (int, error) {
	c.writes++
	switch c.writes {
	case 1:
		c.queue = append(c.queue, "-ERR unknown command\r\n"...)
	case 2:
		c.queue = append(c.queue, c.reply...)
	}
	return len(p), nil
}

func (c *memConn) Read(p []byte) (int, error) {
	if len(c.queue) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.chunk)], c.queue)
	c.queue = c.queue[n:]
	return n, nil
}

func (c *memConn) Close() error                     { return nil }
func (c *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

// doReply runs one command through go-redis against a server answering
// reply, with the connection bounded by lim (nil: as go-redis alone).
func doReply(reply []byte, chunk int, lim *replyLimits) (any, error) {
	c := redis.NewClient(&redis.Options{
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			var conn net.Conn = &memConn{reply: reply, chunk: chunk}
			if lim != nil {
				conn = bound(conn, *lim)
			}
			return conn, nil
		},
		MaxRetries:      -1,
		DisableIdentity: true,
		Protocol:        2,
		PoolSize:        1,
	})
	defer c.Close()
	return c.Do(context.Background(), "x").Result()
}

// within reports whether v, a reply as go-redis returns it, keeps to
// lim: arrays no longer nor deeper than it allows, and no more string
// bytes than a reply may hold.
func within(v any, lim replyLimits) bool {
	bytes := 0
	var walk func(v any, depth int) bool
	walk = func(v any, depth int) bool {
		switch v := v.(type) {
		case []any:
			if len(v) > lim.elems || depth >= lim.depth {
				return false
			}
			for _, e := range v {
				if !walk(e, depth+1) {
					return false
				}
			}
		case string:
			bytes += len(v)
		case redis.Error:
			bytes += len(v.Error())
		}
		return bytes <= lim.reply
	}
	return walk(v, 0)
}

// bigNumber finds a length go-redis would allocate for at a cost that
// slows the fuzzer (it trusts it); the bounded client is still run.
var bigNumber = regexp.MustCompile(`[0-9]{5}`)

// FuzzReplyScanner holds the reply scanner to go-redis's own reader, the
// well-kept implementation it must frame alike, on the same bytes split
// into the same reads:
//
//   - what the scanner lets through, go-redis reads exactly as it would
//     without it (the same value, the same error);
//   - what it lets through keeps to the bounds, whatever go-redis makes
//     of it (so a framing that drifted from go-redis's would show here);
//   - a reply that go-redis reads and that keeps to the bounds, in a
//     stream of RESP2 type bytes no longer than one reply may be, is
//     never refused.
func FuzzReplyScanner(f *testing.F) {
	for _, s := range []string{
		"*2\r\n:1\r\n:0\r\n", "$5\r\nhello\r\n", "+OK\r\n", "-ERR x\r\n", ":12\r\n",
		"$-1\r\n", "*-1\r\n", "*0\r\n", "$-01\r\n", "$+2\r\nab\r\n", "$02\r\nab\r\n",
		"*2\r\n$-1\r\n-E\r\n", "*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", "*5\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n",
		"$1999999999\r\n", "*1999999999\r\n", "$-5\r\n", "$1\r\nabc\r\n", "$1\r\na\r\n:1\r\n",
		"+OK\n", "\r\n", "x\r\n", "%1\r\n+a\r\n:1\r\n", "_\r\n", "#t\r\n", ":abc\r\n",
		"+OK\r\n$1999999999\r\n",
	} {
		f.Add(uint8(0), []byte(s))
		f.Add(uint8(2), []byte(s))
	}
	lim := replyLimits{reply: 64, elems: 4, depth: 3}
	f.Fuzz(func(t *testing.T, chunk uint8, data []byte) {
		if len(data) > 512 {
			return
		}
		n := int(chunk%8) + 1
		got, gotErr := doReply(data, n, &lim)
		refused := errors.Is(gotErr, errReply)
		if !refused && !within(got, lim) {
			t.Fatalf("%q: let through %#v, beyond %+v", data, got, lim)
		}
		if bigNumber.Match(data) {
			return
		}
		want, wantErr := doReply(data, n, nil)
		if !refused {
			if g, w := fmt.Sprintf("%#v %v", got, gotErr), fmt.Sprintf("%#v %v", want, wantErr); g != w {
				t.Fatalf("%q: bounded %s, go-redis %s", data, g, w)
			}
			return
		}
		var rerr redis.Error
		parsed := wantErr == nil || errors.As(wantErr, &rerr)
		if parsed && within(want, lim) && len(data) <= lim.reply && !bytes.ContainsAny(data, "_,#!=(~%|>") {
			t.Fatalf("%q: refused (%v) what go-redis reads as %#v within %+v", data, gotErr, want, lim)
		}
	})
}
