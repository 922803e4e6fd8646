//go:build unix

package sockpeek

import (
	"net"
	"syscall"
)

// look peeks at one byte of c's socket without blocking; ok is false when
// c has no socket of its own.
func look(c net.Conn) (State, bool) {
	if _, ok := c.(netConner); ok {
		return 0, false // a wrapper: its buffers hide bytes from the socket
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return Closed, true
	}
	s := Open
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		var n int
		var err error
		for range 4 {
			if n, _, err = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT); err != syscall.EINTR {
				break
			}
		}
		switch {
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
			s = Open
		case err != nil || n == 0:
			s = Closed
		default:
			s = Data
		}
		return true // never wait
	})
	if err != nil {
		return Closed, true
	}
	return s, true
}
