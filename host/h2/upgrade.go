package h2

import (
	"bufio"
	"encoding/base64"
	"net"
	"time"

	"golang.org/x/net/http2"
)

// Upgrade is the HTTP/1.1 request that asked to switch to h2c (RFC 7540,
// 3.2): it becomes stream 1 of the HTTP/2 connection.
type Upgrade struct {
	Method, RequestURI, Host string
	// Fields are the request's header fields, names and values in turn;
	// hop-by-hop fields (Connection, Upgrade, HTTP2-Settings and those
	// Connection names) are left out by the caller.
	Fields []string
	// Settings is the HTTP2-Settings field's value: a SETTINGS payload,
	// base64url-encoded.
	Settings string
}

// DecodeSettings checks an HTTP2-Settings value; a request that carries
// a bad one is not upgraded.
func DecodeSettings(v string) ([]byte, bool) {
	p, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		if p, err = base64.URLEncoding.DecodeString(v); err != nil {
			return nil, false
		}
	}
	return p, len(p)%6 == 0
}

// ServeUpgrade serves a connection that asked to switch to h2c with the
// request u, once the caller has written "101 Switching Protocols"; br
// holds what the client sent past the request. The response to u goes
// out on stream 1, then the client's preface is read.
func (s *Server) ServeUpgrade(nc net.Conn, br *bufio.Reader, u *Upgrade) {
	if !s.admit(nc) {
		return
	}
	defer s.wg.Done()
	c := newConn(s, &bufferedConn{Conn: nc, br: br})
	if !s.track(c) {
		return
	}
	c.br = brPool.Get().(*bufio.Reader)
	c.br.Reset(c.nc)
	payload, ok := DecodeSettings(u.Settings)
	if !ok {
		c.end(nil)
		return
	}
	if err := c.onSettings(http2.FrameHeader{Type: http2.FrameSettings}, payload); err != nil {
		c.end(err)
		return
	}
	c.mu.Lock()
	c.wbuf = c.wbuf[:0] // the 101 acknowledged those settings
	c.wbuf = appendSettings(c.wbuf, c.o)
	c.wbuf = appendWindowUpdate(c.wbuf, 0, uint32(c.o.ConnWindow-65535))
	c.mu.Unlock()
	st := newStream(c, 1)
	st.setPseudo(pMethod, u.Method)
	st.setPseudo(pScheme, "http")
	st.setPseudo(pAuthority, u.Host)
	st.setPseudo(pPath, u.RequestURI)
	for i := 0; i+1 < len(u.Fields); i += 2 {
		st.req.add(u.Fields[i], u.Fields[i+1], true)
	}
	st.remoteDone, st.declared = true, 0
	c.lastID, c.firstHeader, c.upgraded = 1, true, true
	c.mu.Lock()
	c.streams[1] = st
	c.mu.Unlock()
	_ = nc.SetReadDeadline(time.Time{})
	if c.runInline(st) {
		<-c.done // the loop goes on in another goroutine; the caller closes nc on return
		return
	}
	c.loop()
}

// bufferedConn reads what the HTTP/1.1 engine had buffered first.
type bufferedConn struct {
	net.Conn
	br *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) {
	if b.br != nil && b.br.Buffered() > 0 {
		return b.br.Read(p)
	}
	return b.Conn.Read(p)
}

// NetConn returns the connection wrapped, for sockpeek and linger.
func (b *bufferedConn) NetConn() net.Conn { return b.Conn }
