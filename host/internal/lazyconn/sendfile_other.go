//go:build !linux

package lazyconn

import (
	"io"
	"net"
)

type sendState struct{ corked bool }

func (s *sendState) init(*net.TCPConn) {}

func (c *Conn) sendRegion(io.Reader) (int64, error, bool) { return 0, nil, false }

func (c *Conn) writeNext([]byte) (int, error, bool) {
	c.next.Store(nextPlain)
	return 0, nil, false
}
