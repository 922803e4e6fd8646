//go:build unix

package proxy

import (
	"crypto/tls"
	"net"
	"syscall"
)

// alive reports whether an idle pooled connection is still open, by
// peeking at its socket without blocking: nothing to read means open; a
// read of zero bytes means the upstream closed it; stray bytes on a plain
// connection mean it can no longer be trusted to frame a response.
func alive(c net.Conn) bool {
	if cc, ok := c.(*countedConn); ok {
		c = cc.Conn
	}
	isTLS := false
	if tc, ok := c.(*tls.Conn); ok {
		c, isTLS = tc.NetConn(), true
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := true
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
		case err != nil || n == 0:
			open = false
		default:
			open = isTLS // a TLS record (a ticket, say) may come unasked
		}
		return true // never wait
	})
	return err == nil && open
}
