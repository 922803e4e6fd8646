//go:build !unix

package lazyconn

import "net"

type writeWait struct{}

func (w *writeWait) init(*net.TCPConn) {}

// WriteWait writes p; outside unix it does not wait.
func (c *Conn) WriteWait(p []byte) error {
	_, err := c.Write(p)
	return err
}
