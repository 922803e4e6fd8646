package lazyconn

import (
	"time"
)

// Lingering close bounds: each read waits at most lingerRead, all of them
// together at most lingerTotal (nginx's lingering_timeout and
// lingering_time, shorter).
const (
	lingerRead  = 2 * time.Second
	lingerTotal = 5 * time.Second
)

// Linger makes Close a lingering close: it shuts the sending side, then
// reads and discards what the client still sends, for a bounded time,
// before closing. A server that answers an early error (400, 413, 431)
// while the client is still sending its request would otherwise close a
// socket with unread data, which makes the kernel send a reset that can
// destroy the response before the client has read it. nginx does the
// same (lingering_close).
func (c *Conn) Linger() { c.linger.Store(true) }

// Close closes the connection, lingering first when Linger was called.
func (c *Conn) Close() error {
	if c.linger.Swap(false) {
		_ = c.TCPConn.CloseWrite()
		var buf [4 << 10]byte
		end := time.Now().Add(lingerTotal)
		for {
			d := time.Now().Add(lingerRead)
			if d.After(end) {
				d = end
			}
			if time.Until(d) <= 0 {
				break
			}
			_ = c.TCPConn.SetReadDeadline(d)
			if _, err := c.TCPConn.Read(buf[:]); err != nil {
				break
			}
		}
	}
	return c.TCPConn.Close()
}
