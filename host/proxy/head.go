package proxy

import (
	"bufio"
	"bytes"
	"io"
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
	wire    []byte // the head of the current try
}

func (h *head) reset() {
	h.lines, h.cookies, h.cookie, h.wire = h.lines[:0], h.cookies[:0], false, h.wire[:0]
	if cap(h.lines) > 64<<10 {
		h.lines = nil
	}
}

// add appends a header line. Cookie values are joined whole, never
// parsed: a pair the proxy could not parse still goes up as sent.
func (h *head) add(k, v []byte) {
	if len(k) == 6 && ascii.EqualFold(k, "cookie") {
		if len(h.cookies) > 0 && len(v) > 0 {
			h.cookies = append(h.cookies, "; "...)
		}
		h.cookies = appendClean(h.cookies, v)
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

func appendLine(b, k, v []byte) []byte {
	b = appendClean(b, k)
	b = append(b, ": "...)
	b = appendClean(b, v)
	return append(b, "\r\n"...)
}

// appendClean appends v with CR and LF turned into spaces, so that no
// value can add a header line of its own.
func appendClean(b, v []byte) []byte {
	if bytes.IndexByte(v, '\r') < 0 && bytes.IndexByte(v, '\n') < 0 {
		return append(b, v...)
	}
	for _, c := range v {
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return b
}

// buildH1 writes the head of one try into s.hd.wire.
func (s *state) buildH1(u *upstream) {
	w := s.hd.wire[:0]
	if len(s.wsKey) > 0 {
		w = append(w, "GET"...) // extended CONNECT, as HTTP/1.1 (RFC 8441, 5)
	} else {
		w = append(w, s.x.Method()...)
	}
	w = append(w, ' ')
	w = append(w, s.uri...)
	w = append(w, " HTTP/1.1\r\n"...)
	if !s.h.upSetsHost {
		w = append(w, "Host: "...)
		if s.h.keepHost {
			w = appendClean(w, s.x.Host())
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
			w = appendLine(w, []byte("Trailer"), t) // the fields writeTrailers sends
		}
	case !s.upgrade && !bodyless(s.x.Method()):
		w = append(w, "Content-Length: 0\r\n"...)
	}
	s.hd.wire = append(w, "\r\n"...)
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

func (s *state) addTrailer(k, v []byte) {
	if !hopByHop(k) {
		s.hd.wire = appendLine(s.hd.wire, k, v)
	}
}
