//go:build linux

package lazyconn

import (
	"io"
	"net"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// sendState is the state of one sendRegion and of the cork, kept in the Conn
// so that the poller callbacks are bound once per connection, not
// allocated per call. Only the goroutine writing to the connection uses
// it.
type sendState struct {
	rc       syscall.RawConn
	fileStep func(fd uintptr) bool

	in      int   // the file's descriptor
	off     int64 // the next offset in the file
	left    int64 // bytes still to send
	written int64
	err     error

	corked       bool // TCP_CORK is set (CorkNext)
	cork, uncork func(fd uintptr)
}

func setCork(fd uintptr)   { _ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_CORK, 1) }
func clearCork(fd uintptr) { _ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_CORK, 0) }

// uncork clears TCP_CORK if set: the held bytes leave.
func (c *Conn) uncork() {
	if s := &c.sf; s.corked {
		s.corked = false
		_ = s.rc.Control(s.uncork)
	}
}

// writeNext writes p corked, as CorkNext asked, or, already corked,
// writes it and uncorks. ok is false when the connection has no raw
// access: then nothing was written.
func (c *Conn) writeNext(p []byte) (n int, err error, ok bool) {
	s := &c.sf
	next := c.next.Swap(nextPlain)
	if s.rc == nil {
		return 0, nil, false
	}
	if s.corked || next != nextCork { // the write after the corked one
		n, err = c.write(p)
		c.uncork()
		return n, err, true
	}
	_ = s.rc.Control(s.cork)
	s.corked = true
	n, err = c.write(p)
	if err != nil {
		c.uncork()
	}
	return n, err, true
}

func (s *sendState) init(tc *net.TCPConn) {
	rc, err := tc.SyscallConn()
	if err != nil {
		return
	}
	s.rc, s.fileStep = rc, s.sendfile
	s.cork, s.uncork = setCork, clearCork
}

// maxSendfile bounds one sendfile(2) call, as the Go runtime does.
const maxSendfile = 1 << 30

// sendfile is the poller callback of sendRegion: it sends until done, an
// error, or a full socket (false: wait until it is writable).
func (s *sendState) sendfile(fd uintptr) bool {
	for s.left > 0 {
		n, err := unix.Sendfile(int(fd), s.in, &s.off, int(min(s.left, maxSendfile)))
		if n > 0 {
			s.written += int64(n)
			s.left -= int64(n)
		}
		switch {
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			return false
		case err != nil:
			s.err = err
			return true
		case n == 0:
			s.err = io.ErrUnexpectedEOF // the file is shorter than said
			return true
		}
	}
	return true
}

// sendRegion sends a FileRegion (alone or under an io.LimitedReader, as
// bufio and fasthttp hand it on) with sendfile(2) from the region's own
// offset. handled is false for any other reader.
func (c *Conn) sendRegion(r io.Reader) (n int64, err error, handled bool) {
	s := &c.sf
	lr, _ := r.(*io.LimitedReader)
	if lr != nil {
		r = lr.R
	}
	fr, ok := r.(FileRegion)
	if !ok || s.rc == nil {
		return 0, nil, false
	}
	defer c.uncork()
	f, off, left := fr.Region()
	if lr != nil && lr.N < left {
		left = lr.N
	}
	if left <= 0 {
		return 0, nil, true
	}
	s.in, s.off, s.left, s.written, s.err = int(f.Fd()), off, left, 0, nil
	werr := s.rc.Write(s.fileStep)
	runtime.KeepAlive(f)
	n, err = s.written, s.err
	s.err = nil
	fr.Advance(n)
	if lr != nil {
		lr.N -= n
	}
	if err == nil {
		err = werr
	}
	if err != nil {
		err = &net.OpError{Op: "sendfile", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: wrapSyscall("sendfile", err)}
	}
	return n, err, true
}

func wrapSyscall(name string, err error) error {
	if errno, ok := err.(unix.Errno); ok {
		return os.NewSyscallError(name, errno)
	}
	return err
}
