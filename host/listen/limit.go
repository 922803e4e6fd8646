package listen

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// limitListener counts the connections open, so that a drain can wait
// for the long-lived ones (a WebSocket or other upgraded connection that
// the engines no longer track once it is handed off), and bounds them
// when max_conns is set: Accept waits for one to close, so that further
// clients wait in the kernel's accept queue. Unlike x/net/netutil's, its
// connections keep ReadFrom, so that sendfile(2) still works behind it.
type limitListener struct {
	net.Listener
	sem  chan struct{} // nil: no limit
	open atomic.Int64  // accepted and not yet closed
	done chan struct{}
	once sync.Once
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	l := &limitListener{Listener: ln, done: make(chan struct{})}
	if n > 0 {
		l.sem = make(chan struct{}, n)
	}
	return l
}

func (l *limitListener) Accept() (net.Conn, error) {
	if l.sem != nil {
		select {
		case l.sem <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		if l.sem != nil {
			<-l.sem
		}
		return nil, err
	}
	l.open.Add(1)
	return &limitedConn{Conn: c, l: l}, nil
}

func (l *limitListener) release() {
	l.open.Add(-1)
	if l.sem != nil {
		<-l.sem
	}
}

func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// waitClosed waits until every connection accepted is closed, or ctx
// ends. It polls: it runs once per drain, off the request path.
func (l *limitListener) waitClosed(ctx context.Context) error {
	for tick := time.Millisecond; l.open.Load() > 0; tick = min(2*tick, 100*time.Millisecond) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d connections still open: %w", l.open.Load(), ctx.Err())
		case <-time.After(tick):
		}
	}
	return nil
}

type limitedConn struct {
	net.Conn
	l      *limitListener
	closed atomic.Bool
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.l.release()
	}
	return err
}

func (c *limitedConn) ReadFrom(r io.Reader) (int64, error) { return readFrom(c.Conn, r) }

// NetConn returns the connection limited, for sockpeek.
func (c *limitedConn) NetConn() net.Conn { return c.Conn }
