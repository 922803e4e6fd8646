package lazyconn

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Conn is a TCP connection with lazy deadlines; see the package
// documentation.
type Conn struct {
	*net.TCPConn

	mu     sync.Mutex // guards rd and wd, and orders runtime deadline changes
	rd, wd deadline

	ww writeWait // WriteWait's state; see writewait_unix.go
	sf sendState // sendfile and TCP_CORK state; see sendfile_linux.go

	next atomic.Int32 // how the next Write goes out: nextPlain, nextCork (region.go)

	linger atomic.Bool // Close lingers (linger.go)
}

// deadline is one direction's deadline in Unix nanoseconds, 0 for none.
type deadline struct {
	want  int64 // as the caller set it
	armed int64 // as set on the runtime's poller: never later than want
}

// maxRearm bounds the re-arms of one read or write; each re-arm sets the
// wanted deadline, so a second is only needed when the caller moves it.
const maxRearm = 8

// Wrap returns c as a *Conn when it is a TCP connection, else c itself.
func Wrap(c net.Conn) net.Conn {
	if tc, ok := c.(*net.TCPConn); ok {
		lc := &Conn{TCPConn: tc}
		lc.ww.init(tc)
		lc.sf.init(tc)
		return lc
	}
	return c
}

// Listener wraps the connections a TCP listener accepts.
type Listener struct{ net.Listener }

// Accept returns the next connection, wrapped.
func (l Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return Wrap(c), nil
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	if n := t.UnixNano(); n > 0 {
		return n
	}
	return 1 // before 1970: long past
}

func unnanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// SetDeadline sets both deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetReadDeadline sets the read deadline; the runtime timer moves only
// when t comes before the armed one.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rd.update(nanos(t)) {
		return c.TCPConn.SetReadDeadline(t)
	}
	return nil
}

// SetWriteDeadline sets the write deadline, as SetReadDeadline does.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wd.update(nanos(t)) {
		return c.TCPConn.SetWriteDeadline(t)
	}
	return nil
}

// update records the wanted deadline w and reports whether the runtime's
// must move to it: only when w comes before the armed one. A later or no
// deadline waits for the armed one to fire.
func (d *deadline) update(w int64) bool {
	d.want = w
	if d.armed == w || (d.armed != 0 && (w == 0 || w > d.armed)) {
		return false
	}
	d.armed = w
	return true
}

// early reports whether err is a timeout of the armed deadline before the
// wanted one, and if so arms the wanted one.
func (c *Conn) early(err error, write bool) bool {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.deadline(write); d.want != 0 && d.want <= time.Now().UnixNano() {
		return false // the caller's deadline has passed
	}
	return c.armLocked(write) == nil
}

func (c *Conn) deadline(write bool) *deadline {
	if write {
		return &c.wd
	}
	return &c.rd
}

// armLocked sets the runtime's deadline to the wanted one; c.mu is held.
func (c *Conn) armLocked(write bool) error {
	d := c.deadline(write)
	d.armed = d.want
	if write {
		return c.TCPConn.SetWriteDeadline(unnanos(d.want))
	}
	return c.TCPConn.SetReadDeadline(unnanos(d.want))
}

// Read reads like (*net.TCPConn).Read, its deadline the caller's.
func (c *Conn) Read(p []byte) (int, error) {
	for range maxRearm {
		n, err := c.TCPConn.Read(p)
		if err == nil || n > 0 || !c.early(err, false) {
			return n, err
		}
	}
	return c.TCPConn.Read(p)
}

// Write writes like (*net.TCPConn).Write, its deadline the caller's.
func (c *Conn) Write(p []byte) (int, error) {
	if c.next.Load() != nextPlain || c.sf.corked {
		if n, err, ok := c.writeNext(p); ok {
			return n, err
		}
	}
	return c.write(p)
}

func (c *Conn) write(p []byte) (int, error) {
	written := 0
	for range maxRearm {
		n, err := c.TCPConn.Write(p[written:])
		written += n
		if err == nil || !c.early(err, true) {
			return written, err
		}
	}
	n, err := c.TCPConn.Write(p[written:])
	return written + n, err
}

// ReadFrom keeps sendfile(2) and splice(2), and sends a FileRegion with
// sendfile(2) at the region's offset. A reader's bytes cannot be handed
// back after a timeout, so the wanted deadline is armed first.
func (c *Conn) ReadFrom(r io.Reader) (int64, error) {
	c.arm(true)
	if n, err, ok := c.sendRegion(r); ok {
		return n, err
	}
	return c.TCPConn.ReadFrom(r)
}

// WriteTo keeps splice(2), arming the wanted read deadline first.
func (c *Conn) WriteTo(w io.Writer) (int64, error) {
	c.arm(false)
	return c.TCPConn.WriteTo(w)
}

// arm sets the runtime deadline to the wanted one.
func (c *Conn) arm(write bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.deadline(write); d.armed != d.want {
		_ = c.armLocked(write)
	}
}
