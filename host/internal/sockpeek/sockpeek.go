package sockpeek

import (
	"crypto/tls"
	"net"
)

// State is what a look at a socket found.
type State int

const (
	// Unknown: the connection has no socket to look at.
	Unknown State = iota
	// Open: nothing waiting to be read, and not closed.
	Open
	// Data: bytes are waiting to be read.
	Data
	// Closed: the peer closed or reset the connection.
	Closed
)

func (s State) String() string {
	switch s {
	case Open:
		return "open"
	case Data:
		return "data"
	case Closed:
		return "closed"
	}
	return "unknown"
}

// netConner is a wrapper that can hand out what it wraps: *tls.Conn, and
// the host's own connection wrappers.
type netConner interface{ NetConn() net.Conn }

// maxUnwrap bounds the wrappers Look goes through.
const maxUnwrap = 8

// Look reports the state of c's socket, going through wrappers that have
// NetConn. isTLS reports whether a TLS layer was among them: there, Data
// may be a record the TLS layer would consume by itself (a session
// ticket, or the close_notify before a close).
func Look(c net.Conn) (s State, isTLS bool) {
	for range maxUnwrap {
		if _, ok := c.(*tls.Conn); ok {
			isTLS = true
		}
		if s, ok := look(c); ok {
			return s, isTLS
		}
		w, ok := c.(netConner)
		if !ok {
			break
		}
		c = w.NetConn()
	}
	return Unknown, isTLS
}
