//go:build unix

package lazyconn

import (
	"net"
	"syscall"
)

// writeWait is the state of one WriteWait, kept in the Conn so that the
// poller callback is bound once per connection, not allocated per call.
type writeWait struct {
	rc      syscall.RawConn
	fn      func(fd uintptr) bool
	p       []byte
	n       int
	err     error
	written bool
}

func (w *writeWait) init(tc *net.TCPConn) {
	rc, err := tc.SyscallConn()
	if err != nil {
		return
	}
	w.rc, w.fn = rc, w.step
}

// step is the poller callback: the first call writes, and returns false
// to wait for readability when all of p went out; the next call (the
// socket is readable) ends the wait.
func (w *writeWait) step(fd uintptr) bool {
	if w.written {
		return true
	}
	w.written = true
	for w.n < len(w.p) {
		n, err := syscall.Write(int(fd), w.p[w.n:])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return true // the socket is full: the rest is written the usual way
		case err != nil:
			w.err = err
			return true
		}
		w.n += n
	}
	return false
}

// WriteWait writes p, a request, and waits until the connection has
// something to read: the answer, or the peer's close. It saves the
// read(2) that a read right after the write would make only to find
// nothing there yet.
//
// The write is made from inside the poller's read wait, after the wait
// has reset the socket's readiness: the answer cannot arrive before the
// request has gone, so its arrival is never missed. A wait that would
// start before the write could miss an answer that came in between.
//
// An error is the write's; the wait's own end (the read deadline, a
// close) is left for the next Read to meet. When the socket cannot take
// all of p at once, the rest is written like Write and WriteWait returns
// without waiting. WriteWait must not run beside another Write or Read on
// c: it is for a client that owns the connection for one exchange.
func (c *Conn) WriteWait(p []byte) error {
	w := &c.ww
	if w.rc == nil {
		_, err := c.Write(p)
		return err
	}
	w.p, w.n, w.err, w.written = p, 0, nil, false
	_ = w.rc.Read(w.fn) // its error is the wait's: a deadline or a close
	n, err := w.n, w.err
	w.p, w.err = nil, nil
	if err != nil {
		return &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	if !w.written || n < len(p) {
		// Not written at all (a deadline already past, say) or the socket
		// filled: write the rest the usual way.
		_, err = c.Write(p[n:])
	}
	return err
}
