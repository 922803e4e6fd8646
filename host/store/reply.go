package store

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// The bounds of one reply from the server. go-redis trusts the lengths a
// reply declares (`$1999999999` makes it allocate 2 GB before reading a
// byte of it, `*N` an N-element slice, and a line without LF grows
// without end), so every connection to the server passes through a
// replyScanner that refuses a reply beyond these before go-redis sees the
// line that declares it. A refused reply fails its call like any other
// store error (a rate limit then follows on_store_error) and the
// connection is dropped.
const (
	// maxReply bounds the bytes of one reply, headers included. The
	// rate-limit script answers about 30 bytes and HELLO under 1 KiB; an
	// ACME blob is a few KiB (MaxBlob keeps what Put writes readable).
	maxReply = 64 << 10
	// maxElems bounds the elements one array declares (go-redis makes
	// the slice before reading them).
	maxElems = 1024
	// maxDepth bounds arrays within arrays.
	maxDepth = 8
)

// MaxBlob is the largest blob Put stores: what a reply of maxReply bytes
// can carry back, with room for its header.
const MaxBlob = maxReply - 64

// errReply is the cause of every refused reply.
var errReply = errors.New("reply refused")

// replyLimits are a scanner's bounds; tests and the fuzz target use
// small ones.
type replyLimits struct {
	reply, elems, depth int
}

var defaultLimits = replyLimits{reply: maxReply, elems: maxElems, depth: maxDepth}

// replyScanner follows the RESP2 framing of the bytes the server sends,
// reply by reply, as go-redis's reader (internal/proto) frames them: a
// line up to LF that must end in CRLF and hold more than CRLF; `+`, `-`
// and `:` are that line alone; `$N` is followed by N+2 bytes (N as
// strconv.Atoi reads it, -1 for none); `*N` by N replies (-1 for none).
// It refuses what go-redis would not read (a line that is not one, a
// length below -1) and the RESP3 types, which a server asked for RESP2
// (Options.Protocol) never sends. FuzzReplyScanner holds it to go-redis.
//
// It does not copy or keep the data: only a header line's text, which
// the reply bound bounds.
type replyScanner struct {
	lim   replyLimits
	used  int   // bytes of the current reply so far
	skip  int   // bytes of a bulk string (and its CRLF) still to pass
	open  []int // per open array, its elements still to come
	line  []byte
	in    bool // inside a line
	typ   byte // the line's type byte
	last  byte // the line's last byte so far
	err   error
	start int // where the current line began in the chunk being scanned
}

// scan follows p, the next bytes from the server. It returns how many
// of them may be handed to go-redis: all of them, or those before the
// line that broke a bound, whose error s.err then holds.
func (s *replyScanner) scan(p []byte) int {
	if s.err != nil {
		return 0
	}
	s.start = 0
	for i := 0; i < len(p); {
		if s.skip > 0 {
			m := min(s.skip, len(p)-i)
			s.skip -= m
			i += m
			if s.skip == 0 {
				s.done()
			}
			continue
		}
		c := p[i]
		if !s.in {
			s.in, s.typ, s.start, s.line = true, c, i, s.line[:0]
			switch c {
			case '+', '-', ':', '$', '*':
			default:
				return s.refuse(fmt.Errorf("type %q is not RESP2", c))
			}
		}
		i++
		s.used++
		if s.used > s.lim.reply {
			return s.refuse(fmt.Errorf("over %d bytes", s.lim.reply))
		}
		if s.typ == '$' || s.typ == '*' {
			s.line = append(s.line, c)
		}
		if c != '\n' {
			s.last = c
			continue
		}
		// The type byte is none of CR and LF, so a line that ends in
		// CRLF holds more than CRLF, as go-redis requires.
		if s.last != '\r' {
			return s.refuse(errors.New("a line must end in CRLF"))
		}
		s.in = false
		if err := s.header(); err != nil {
			return s.refuse(err)
		}
	}
	return len(p)
}

// header acts on the line just ended.
func (s *replyScanner) header() error {
	switch s.typ {
	case '+', '-', ':':
		s.done()
		return nil
	}
	n, err := strconv.Atoi(string(s.line[1 : len(s.line)-2]))
	switch {
	case err != nil:
		return fmt.Errorf("length %.40q is not a number", s.line[1:len(s.line)-2])
	case n < -1:
		return fmt.Errorf("length %d", n)
	case n == -1:
		s.done()
	case s.typ == '$':
		if n > s.lim.reply-s.used-2 {
			return fmt.Errorf("a string of %d bytes is over %d for the reply", n, s.lim.reply)
		}
		s.used += n + 2
		s.skip = n + 2
	case n == 0:
		s.done()
	case n > s.lim.elems:
		return fmt.Errorf("an array of %d is over %d", n, s.lim.elems)
	case len(s.open) >= s.lim.depth:
		return fmt.Errorf("arrays nested over %d deep", s.lim.depth)
	default:
		s.open = append(s.open, n)
	}
	return nil
}

// done counts one element complete: the reply, when it is the last of
// every open array.
func (s *replyScanner) done() {
	for len(s.open) > 0 {
		top := &s.open[len(s.open)-1]
		if *top--; *top > 0 {
			return
		}
		s.open = s.open[:len(s.open)-1]
	}
	s.used = 0
}

func (s *replyScanner) refuse(err error) int {
	s.err = fmt.Errorf("store: %w: %w", errReply, err)
	if s.start > 0 {
		return s.start
	}
	return 0
}

// boundedConn is a connection to the server whose reads pass through a
// replyScanner: go-redis reads only what the scanner let through.
type boundedConn struct {
	net.Conn
	s replyScanner
}

func (c *boundedConn) Read(p []byte) (int, error) {
	if c.s.err != nil {
		return 0, c.s.err
	}
	n, err := c.Conn.Read(p)
	if k := c.s.scan(p[:n]); k < n {
		if k == 0 {
			return 0, c.s.err
		}
		return k, nil // the error comes with the next read, if go-redis needs it
	}
	return n, err
}

// sysConn is a boundedConn over a socket: go-redis's health check peeks
// at the socket (MSG_PEEK, which consumes nothing) to find a connection
// the server closed or wrote to unasked.
type sysConn struct {
	*boundedConn
	sc syscall.Conn
}

func (c sysConn) SyscallConn() (syscall.RawConn, error) { return c.sc.SyscallConn() }

// bound wraps a fresh connection to the server.
func bound(c net.Conn, lim replyLimits) net.Conn {
	b := &boundedConn{Conn: c, s: replyScanner{lim: lim}}
	if sc, ok := c.(syscall.Conn); ok {
		return sysConn{b, sc}
	}
	return b
}
