package h2

import (
	"bytes"
	"encoding/binary"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// headerBlock is the state of the header block being read (HEADERS and
// its CONTINUATION frames).
type headerBlock struct {
	active    bool    // END_HEADERS not seen yet
	id        uint32  // its stream
	st        *stream // the stream filled; nil when decoded only to keep HPACK in step
	trailers  bool
	endStream bool
	refuse    http2.ErrCode // non-zero: reset the stream with it once decoded
	ignore    bool          // a stream past GOAWAY: decoded, then dropped
	raw       int           // bytes of the block so far, frame headers included
	size      int           // header list size (RFC 9113, 6.5.2)
	tooBig    bool
	malformed bool
	regular   bool  // a regular field was seen
	te, host  bool  // a te or host field was seen
	pseudo    uint8 // pseudo-header fields seen
}

const (
	pMethod = 1 << iota
	pScheme
	pAuthority
	pPath
	pProtocol
)

// maxBlock bounds a header block's raw size, CONTINUATIONs included: past
// it the connection ends (CONTINUATION floods).
func (c *conn) maxBlock() int { return max(4*c.o.MaxHeaderBytes, 64<<10) }

func (c *conn) onHeaders(fh http2.FrameHeader, p []byte) error {
	id := fh.StreamID
	if id == 0 || id%2 == 0 {
		return connError(http2.ErrCodeProtocol)
	}
	frag := p
	if fh.Flags.Has(http2.FlagHeadersPadded) {
		if len(frag) == 0 || int(frag[0]) >= len(frag) {
			return connError(http2.ErrCodeProtocol)
		}
		frag = frag[1 : len(frag)-int(frag[0])]
	}
	b := headerBlock{active: true, id: id, endStream: fh.Flags.Has(http2.FlagHeadersEndStream), raw: len(p) + 9}
	if fh.Flags.Has(http2.FlagHeadersPriority) {
		if len(frag) < 5 {
			return connError(http2.ErrCodeFrameSize)
		}
		if binary.BigEndian.Uint32(frag)&(1<<31-1) == id {
			b.refuse = http2.ErrCodeProtocol // depends on itself (5.3.1)
		}
		frag = frag[5:]
	}
	c.mu.Lock()
	switch st := c.streams[id]; {
	case id > c.lastID:
		c.lastID = id
		switch {
		case c.goingAway || c.peerGoAway:
			b.ignore = true
		case b.refuse != 0:
		case len(c.streams) >= int(c.o.MaxConcurrentStreams) || c.handlers >= int(c.o.MaxConcurrentStreams):
			// Handlers of streams reset by the client may still run: they
			// count too, so that resets cannot pile them up (CVE-2023-44487).
			b.refuse = http2.ErrCodeRefusedStream
		default:
			b.st = newStream(c, id)
		}
	case st != nil && !st.remoteDone:
		b.st, b.trailers = st, true
		if !b.endStream {
			b.malformed = true // trailers end the stream (8.1)
		}
	case st != nil:
		b.refuse = http2.ErrCodeStreamClosed
	default:
		c.mu.Unlock()
		return connError(http2.ErrCodeStreamClosed)
	}
	c.mu.Unlock()
	c.hdr = b
	if b.refuse == http2.ErrCodeRefusedStream && c.resets.add(c.o.MaxResets, c.o.ResetWindow) {
		return connError(http2.ErrCodeEnhanceYourCalm)
	}
	if !fh.Flags.Has(http2.FlagHeadersEndHeaders) {
		_ = c.nc.SetReadDeadline(time.Now().Add(c.o.ReadHeaderTimeout))
		c.idleSet = false
	}
	return c.fragment(frag, fh.Flags.Has(http2.FlagHeadersEndHeaders))
}

func (c *conn) onContinuation(fh http2.FrameHeader, p []byte) error {
	if !c.hdr.active || fh.StreamID != c.hdr.id {
		return connError(http2.ErrCodeProtocol)
	}
	c.hdr.raw += len(p) + 9
	if c.hdr.raw > c.maxBlock() {
		return connError(http2.ErrCodeEnhanceYourCalm)
	}
	return c.fragment(p, fh.Flags.Has(http2.FlagContinuationEndHeaders))
}

// fragment decodes a piece of the header block, and acts on the block
// once it is complete.
func (c *conn) fragment(p []byte, end bool) error {
	if _, err := c.hdec.Write(p); err != nil {
		return connError(http2.ErrCodeCompression)
	}
	if !end {
		return nil
	}
	c.hdr.active = false
	if err := c.hdec.Close(); err != nil {
		return connError(http2.ErrCodeCompression)
	}
	b := &c.hdr
	st := b.st
	switch {
	case b.ignore:
		return nil
	case b.refuse != 0:
		c.resetStream(b.id, b.refuse)
		return nil
	case b.trailers:
		c.mu.Lock()
		defer c.mu.Unlock()
		if st.closed {
			return nil
		}
		if b.malformed || b.pseudo != 0 || (st.declared >= 0 && st.received != st.declared) {
			c.resetLocked(st, http2.ErrCodeProtocol)
			return nil
		}
		st.remoteDone = true
		st.closeIfDoneLocked()
		st.cond.Broadcast()
		return nil
	}
	if !b.tooBig && !st.validRequest(b) {
		st.release()
		c.resetStream(b.id, http2.ErrCodeProtocol)
		return nil
	}
	if b.endStream && st.declared > 0 {
		st.release()
		c.resetStream(b.id, http2.ErrCodeProtocol)
		return nil
	}
	st.tooBig = b.tooBig
	st.remoteDone = b.endStream
	if b.endStream {
		st.declared = 0
	}
	c.firstHeader = true
	c.mu.Lock()
	c.streams[st.id] = st
	c.mu.Unlock()
	c.hdr.st = nil
	if !b.endStream {
		c.startDetached(st)
		return nil
	}
	if c.runInline(st) {
		return errHandedOff
	}
	return nil
}

// onField is the HPACK decoder's emit function: it checks one field of
// the block against RFC 9113, 8.2 and 8.3, and records it on the stream.
func (c *conn) onField(f hpack.HeaderField) {
	b := &c.hdr
	b.size += len(f.Name) + len(f.Value) + 32
	if b.size > c.o.MaxHeaderBytes {
		b.tooBig = true
	}
	if b.st == nil || b.malformed || b.tooBig {
		return
	}
	name, value := f.Name, f.Value
	if len(name) > 0 && name[0] == ':' {
		if b.regular || b.trailers {
			b.malformed = true
			return
		}
		var bit uint8
		switch name {
		case ":method":
			bit = pMethod
		case ":scheme":
			bit = pScheme
		case ":authority":
			bit = pAuthority
		case ":path":
			bit = pPath
		case ":protocol":
			bit = pProtocol
		default:
			b.malformed = true
			return
		}
		// The value is checked before it is kept: a CR, LF or NUL in
		// :method or :path would be written into an HTTP/1.1 request
		// line upstream (8.2.1; issue 21's smuggling).
		if b.pseudo&bit != 0 || !httpguts.ValidHeaderFieldValue(value) {
			b.malformed = true
			return
		}
		b.pseudo |= bit
		b.st.setPseudo(bit, value)
		return
	}
	b.regular = true
	if !validName(name) || !httpguts.ValidHeaderFieldValue(value) {
		b.malformed = true
		return
	}
	switch name {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
		b.malformed = true // connection-specific (8.2.2)
		return
	case "te":
		// Once, and "trailers" (or empty, as x/net/http2 allows).
		if b.te || value != "trailers" && value != "" {
			b.malformed = true
			return
		}
		b.te = true
	case "host":
		// At most one, and it must match :authority (as x/net/http2):
		// checked in validRequest.
		if b.host || !httpguts.ValidHostHeader(value) {
			b.malformed = true
			return
		}
		b.host = true
	case "content-length":
		if !b.trailers && !b.st.setDeclared(value) {
			b.malformed = true
			return
		}
	}
	if b.trailers {
		b.st.trailers.add(name, value, true)
	} else {
		b.st.req.add(name, value, true)
	}
}

// validName reports whether a field name is a lower-case token.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if 'A' <= ch && ch <= 'Z' || !httpguts.IsTokenRune(rune(ch)) {
			return false
		}
	}
	return true
}

// fields is a list of header fields in one buffer: no allocation once
// the buffer has grown to the usual size.
type fields struct {
	buf []byte
	kv  []span4
}

type span4 struct{ n0, n1, v0, v1 int32 }

func (f *fields) reset() {
	f.buf = f.buf[:0]
	f.kv = f.kv[:0]
}

func (f *fields) name(i int) []byte  { s := f.kv[i]; return f.buf[s.n0:s.n1:s.n1] }
func (f *fields) value(i int) []byte { s := f.kv[i]; return f.buf[s.v0:s.v1:s.v1] }

// add appends a field; canon writes the name in canonical case
// ("Content-Type"), as the other engines present names.
func (f *fields) add(name, value string, canon bool) {
	n0 := len(f.buf)
	f.buf = append(f.buf, name...)
	if canon {
		canonical(f.buf[n0:])
	}
	n1 := len(f.buf)
	f.buf = append(f.buf, value...)
	f.kv = append(f.kv, span4{int32(n0), int32(n1), int32(n1), int32(len(f.buf))})
}

func (f *fields) addBytes(name, value []byte) {
	f.add(bstr(name), bstr(value), true)
}

func (f *fields) get(name string) []byte {
	for i := range f.kv {
		if equalFold(f.name(i), name) {
			return f.value(i)
		}
	}
	return nil
}

func (f *fields) del(name string) {
	kv := f.kv[:0]
	for i := range f.kv {
		if !equalFold(f.name(i), name) {
			kv = append(kv, f.kv[i])
		}
	}
	f.kv = kv
}

func (f *fields) set(name, value string) {
	f.del(name)
	f.add(name, value, true)
}

func (f *fields) visit(fn func(name, value []byte)) {
	for i := range f.kv {
		fn(f.name(i), f.value(i))
	}
}

func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		x, y := b[i], s[i]
		if x == y {
			continue
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// canonical writes a field name in canonical case in place.
func canonical(b []byte) {
	up := true
	for i, ch := range b {
		switch {
		case up && 'a' <= ch && ch <= 'z':
			b[i] = ch - ('a' - 'A')
		case !up && 'A' <= ch && ch <= 'Z':
			b[i] = ch + ('a' - 'A')
		}
		up = ch == '-'
	}
}

// joinCookies makes the Cookie fields a client split (8.2.3) one field,
// as HTTP/1.1 carries it.
func (f *fields) joinCookies() {
	first, n := -1, 0
	for i := range f.kv {
		if equalFold(f.name(i), "cookie") {
			if first < 0 {
				first = i
			}
			n++
		}
	}
	if n < 2 {
		return
	}
	v0 := int32(len(f.buf))
	for i := range f.kv {
		if equalFold(f.name(i), "cookie") {
			if int32(len(f.buf)) > v0 {
				f.buf = append(f.buf, "; "...)
			}
			f.buf = append(f.buf, f.value(i)...)
		}
	}
	s := f.kv[first]
	s.v0, s.v1 = v0, int32(len(f.buf))
	kv := f.kv[:0]
	for i := range f.kv {
		switch {
		case i == first:
			kv = append(kv, s)
		case equalFold(f.name(i), "cookie"):
		default:
			kv = append(kv, f.kv[i])
		}
	}
	f.kv = kv
}

// lowerInto writes name in lower case into dst.
func lowerInto(dst []byte, name []byte) []byte {
	dst = append(dst[:0], name...)
	for i, ch := range dst {
		if 'A' <= ch && ch <= 'Z' {
			dst[i] = ch + ('a' - 'A')
		}
	}
	return dst
}

var _ = bytes.Equal
