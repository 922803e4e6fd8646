package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/sluicehq/sluice/host/exchange"

	"github.com/sluicehq/sluice/host/internal/ascii"
)

// head is an HTTP/1.1 request head for an upstream, built as bytes: the
// header lines every try shares (the client's end-to-end headers, the
// forwarding ones, header_up), then per try the request line, Host, the
// trace context and the body's framing. It replaces a fasthttp.Request,
// whose per-header copies, special-header bookkeeping and serialization
// were a tenth of the proxy's user-space time.
type head struct {
	lines   []byte // "Name: value\r\n"..., shared by the tries
	cookies []byte // Cookie values joined by "; ", sent as one line (RFC 9113, 8.2.3)
	cookie  bool   // a Cookie field came, though its value may be empty
	bad     bool   // a field was refused (see writable): the head is not to be sent
	wire    []byte // the head of the current try
}

func (h *head) reset() {
	h.lines, h.cookies, h.cookie, h.bad, h.wire = h.lines[:0], h.cookies[:0], false, false, h.wire[:0]
	if cap(h.lines) > 64<<10 {
		h.lines = nil
	}
}

// add appends a header line. Cookie values are joined whole, never
// parsed: a pair the proxy could not parse still goes up as sent. A
// field that is not writable is not added, and marks the head bad.
func (h *head) add(k, v []byte) {
	if !writable(k, v) {
		h.bad = true
		return
	}
	if len(k) == 6 && ascii.EqualFold(k, "cookie") {
		if len(h.cookies) > 0 && len(v) > 0 {
			h.cookies = append(h.cookies, "; "...)
		}
		h.cookies = append(h.cookies, v...)
		h.cookie = true
		return
	}
	h.lines = appendLine(h.lines, k, v)
}

// del removes the lines named k.
func (h *head) del(k string) {
	if len(k) == 6 && ascii.EqualFold([]byte(k), "cookie") {
		h.cookies, h.cookie = h.cookies[:0], false
		return
	}
	out := h.lines[:0]
	for rest := h.lines; len(rest) > 0; {
		end := bytes.Index(rest, crlf) + 2
		if end < 2 {
			end = len(rest)
		}
		line := rest[:end]
		rest = rest[end:]
		if c := bytes.IndexByte(line, ':'); c >= 0 && ascii.EqualFold(line[:c], k) {
			continue
		}
		out = append(out, line...) // out never passes line: an in-place copy
	}
	h.lines = out
}

var crlf = []byte("\r\n")

// appendLine appends "k: v\r\n"; k and v are writable.
func appendLine(b, k, v []byte) []byte {
	b = append(b, k...)
	b = append(b, ": "...)
	b = append(b, v...)
	return append(b, "\r\n"...)
}

// errUnwritable is a request the proxy will not write upstream: its
// method is not a token, or its target, Host or a field holds a byte
// that would end a line or the head (CR, LF, NUL; SP or a control byte
// in the target). The front door refuses such requests from clients
// (host/frontdoor); this is the second line against request smuggling,
// should a filter or an engine hand one on.
var errUnwritable = &exchange.Error{Status: http.StatusBadRequest, Message: "bad request: request cannot be forwarded"}

// writable reports whether a field can be written into an HTTP/1.1
// head as it is: a name that is a token, a value without CR, LF or NUL.
func writable(k, v []byte) bool {
	return ascii.Token(k) && cleanValue(v)
}

// cleanValue reports whether v has no CR, LF or NUL.
func cleanValue(v []byte) bool {
	for _, c := range v {
		if c == '\r' || c == '\n' || c == 0 {
			return false
		}
	}
	return true
}

// cleanTarget reports whether a request target can go into a request
// line: not empty, no control byte, SP or DEL.
func cleanTarget(t []byte) bool {
	if len(t) == 0 {
		return false
	}
	for _, c := range t {
		if c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// buildH1 writes the head of one try into s.hd.wire. It refuses
// (errUnwritable) a head that would carry a CR, LF or NUL it was given,
// or a method or target that would split the request line.
func (s *state) buildH1(u *upstream) error {
	m := s.x.Method()
	if len(s.wsKey) > 0 {
		m = []byte("GET") // extended CONNECT, as HTTP/1.1 (RFC 8441, 5)
	}
	if s.hd.bad || !ascii.Token(m) || !cleanTarget(s.uri) {
		return errUnwritable
	}
	w := s.hd.wire[:0]
	w = append(w, m...)
	w = append(w, ' ')
	w = append(w, s.uri...)
	w = append(w, " HTTP/1.1\r\n"...)
	if !s.h.upSetsHost {
		w = append(w, "Host: "...)
		if s.h.keepHost {
			h := s.x.Host()
			if !cleanValue(h) {
				return errUnwritable
			}
			w = append(w, h...)
		} else {
			w = append(w, u.t.host...)
		}
		w = append(w, "\r\n"...)
	}
	w = append(w, s.hd.lines...)
	if s.hd.cookie {
		w = append(w, "Cookie: "...)
		w = append(w, s.hd.cookies...)
		w = append(w, "\r\n"...)
	}
	if s.parent.IsValid() {
		w = s.appendTraceH1(w)
	}
	switch {
	case s.bodyLen > 0:
		w = append(w, "Content-Length: "...)
		w = strconv.AppendInt(w, s.bodyLen, 10)
		w = append(w, "\r\n"...)
	case s.bodyLen < 0:
		w = append(w, "Transfer-Encoding: chunked\r\n"...)
		if t := s.x.RequestHeader("Trailer"); len(t) > 0 {
			if !cleanValue(t) {
				return errUnwritable
			}
			w = appendLine(w, []byte("Trailer"), t) // the fields writeTrailers sends
		}
	case !s.upgrade && !bodyless(m):
		w = append(w, "Content-Length: 0\r\n"...)
	}
	s.hd.wire = append(w, "\r\n"...)
	return nil
}

// bodyless reports the methods whose requests carry no Content-Length
// when they have no body.
func bodyless(m []byte) bool { return string(m) == "GET" || string(m) == "HEAD" }

// chunkBufs hold the pieces of a chunked request body on their way up.
var chunkBufs = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// writeBody sends the client's body after the head: as is when its
// length is known, else chunked, each piece flushed as it comes (a
// streamed upload reaches the upstream as it is sent).
func (s *state) writeBody(bw *bufio.Writer) error {
	if s.bodyLen > 0 {
		n, err := io.CopyN(bw, s.body, s.bodyLen)
		if err == io.EOF && n < s.bodyLen {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	bp := chunkBufs.Get().(*[]byte)
	defer chunkBufs.Put(bp)
	buf := *bp
	for {
		n, err := s.body.Read(buf)
		if n > 0 {
			var size [16]byte
			if _, werr := bw.Write(strconv.AppendInt(size[:0], int64(n), 16)); werr != nil {
				return werr
			}
			bw.WriteString("\r\n")
			bw.Write(buf[:n])
			bw.WriteString("\r\n")
			if werr := bw.Flush(); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return s.writeTrailers(bw)
		}
		if err != nil {
			return err
		}
	}
}

// writeTrailers ends a chunked body with the client's trailer fields
// (end-to-end ones only), known now that its body has been read whole.
func (s *state) writeTrailers(bw *bufio.Writer) error {
	s.hd.wire = append(s.hd.wire[:0], "0\r\n"...)
	exchange.VisitRequestTrailers(s.x, s.addTrailer)
	s.hd.wire = append(s.hd.wire, "\r\n"...)
	_, err := bw.Write(s.hd.wire)
	return err
}

// addTrailer writes one trailer field; one that is not writable is
// dropped (the body is sent by now: there is no answer left to refuse
// with).
func (s *state) addTrailer(k, v []byte) {
	if !hopByHop(k) && writable(k, v) {
		s.hd.wire = appendLine(s.hd.wire, k, v)
	}
}
