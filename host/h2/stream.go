package h2

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/sluicehq/sluice/host/exchange"
	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
)

// stream is one request and its response: the engine's stream state and
// the exchange.Exchange the handlers see. It is pooled; one serves one
// request.
type stream struct {
	exchange.Hooks
	c   *conn
	id  uint32
	gen uint64 // bumped on reuse, for ClientWatch
	// ctxTaken: a handler asked for the stream as a context (Context)
	// or for a ClientWatch, which may outlive the request (a goroutine
	// of context.WithCancel, say): such a stream is never pooled again
	// (see release).
	ctxTaken bool
	// cond waits (on c.mu) for request body data and for send credit.
	cond sync.Cond

	// Request.
	req         fields
	pseudo      fields // :method, :scheme, :authority, :path, :protocol as indexes 0..4
	pidx        [5]int8
	trailers    fields
	declared    int64 // Content-Length sent, or -1
	tooBig      bool
	body        io.Reader // SetRequestBody or LimitRequestBody's replacement; nil: the stream
	bodyReader  bytes.Reader
	readDL      time.Time
	in          []byte // request body received, not yet read (c.mu)
	inOff       int
	received    int64
	recvWindow  int32 // credit the client has left on this stream (c.mu)
	unack       int32 // body bytes read, credit not yet returned (c.mu)
	remoteDone  bool  // END_STREAM received (c.mu)
	localDone   bool  // END_STREAM sent (c.mu)
	closed      bool  // out of c.streams (c.mu)
	aborted     bool  // reset or its connection ended (c.mu)
	inline      bool  // the handler runs on the read loop's goroutine
	handedOff   bool  // it took the loop's goroutine (WillBlock)
	handlerDone bool  // (c.mu)
	queued      bool  // in c.ready (c.mu)
	draining    bool  // the response is out, the body is dropped as it comes (c.mu)
	tunnel      bool  // Upgrade took the stream (extended CONNECT)
	tunnelShut  bool  // the tunnel's Close ran (c.mu)
	ctxOver     context.Context
	done        chan struct{}
	gone        []*goneWatch // AfterClientGone's, run when the stream is aborted (c.mu)

	// Response, recorded while the handler runs.
	status  int
	resp    fields
	own     []byte              // Write's buffer
	bodyRef []byte              // the buffered body (own or SetBody's slice)
	src     exchange.BodySource // SendFile's, Stream's or SendReader's body, not sent yet

	// Output waiting for credit (c.mu).
	sendWindow int64
	outBytes   []byte
	outFile    *os.File
	outOff     int64
	outLeft    int64
	outEnd     bool // END_STREAM goes with the last of it
	waiting    bool // a producer waits for credit
}

var streamPool = sync.Pool{New: func() any { return new(stream) }}

func newStream(c *conn, id uint32) *stream {
	st := streamPool.Get().(*stream)
	st.c, st.id = c, id
	st.cond.L = &c.mu
	st.declared = -1
	st.status = 200
	st.recvWindow = c.o.StreamWindow
	st.sendWindow = int64(c.initWindow)
	st.pidx = [5]int8{-1, -1, -1, -1, -1}
	return st
}

// release returns a stream to the pool; nothing may refer to it.
func (st *stream) release() {
	st.src.Release()
	if st.outFile != nil {
		st.outFile.Close()
	}
	if st.ctxTaken {
		// A context made of this stream may still be asked Done or Err:
		// it must keep its connection and read as cancelled, so the
		// stream is left as it is, to the garbage collector. release
		// runs under c.mu here (maybeReleaseLocked), as Done does.
		st.outFile = nil
		if !st.aborted {
			st.aborted = true
			if st.done != nil {
				close(st.done)
			}
		}
		return
	}
	for i, w := range st.gone {
		w.done = true // the request is over: f will not run
		st.gone[i] = nil
	}
	st.req.reset()
	st.pseudo.reset()
	st.trailers.reset()
	st.resp.reset()
	if cap(st.in) > 64<<10 {
		st.in = nil
	}
	if cap(st.own) > 64<<10 {
		st.own = nil
	}
	st.ResetHooks()
	*st = stream{
		gen: st.gen + 1, req: st.req, pseudo: st.pseudo, trailers: st.trailers, resp: st.resp,
		in: st.in[:0], own: st.own[:0], gone: st.gone[:0],
	}
	streamPool.Put(st)
}

func (st *stream) setPseudo(bit uint8, v string) {
	i := 0
	for b := bit; b > 1; b >>= 1 {
		i++
	}
	st.pidx[i] = int8(len(st.pseudo.kv))
	st.pseudo.add("", v, false)
}

func (st *stream) pseudoValue(i int) []byte {
	if st.pidx[i] < 0 {
		return nil
	}
	return st.pseudo.value(int(st.pidx[i]))
}

func (st *stream) setDeclared(v string) bool {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || (st.declared >= 0 && st.declared != n) {
		return false
	}
	st.declared = n
	return true
}

// validRequest checks the request pseudo-header fields (8.3.1), as
// strictly as x/net/http2's server does, and a little more (a token
// :method, a :path without spaces): a request refused here never
// reaches a handler, whatever the front door would have done.
func (st *stream) validRequest(b *headerBlock) bool {
	if b.malformed || b.pseudo&pMethod == 0 {
		return false
	}
	method, scheme, authority, path := st.pseudoValue(0), st.pseudoValue(1), st.pseudoValue(2), st.pseudoValue(3)
	if !validMethod(method) || !httpguts.ValidHostHeader(bstr(authority)) {
		return false
	}
	connect := string(method) == http.MethodConnect
	if b.pseudo&pProtocol != 0 {
		// Extended CONNECT (RFC 8441, 4): only where advertised, only
		// with CONNECT, and with :scheme, :path and :authority.
		if st.c.o.NoConnectProtocol || !connect ||
			b.pseudo&(pScheme|pPath|pAuthority) != pScheme|pPath|pAuthority ||
			len(path) == 0 || len(st.pseudoValue(4)) == 0 || len(authority) == 0 ||
			!validPath(path, false) {
			return false
		}
	} else if connect {
		if b.pseudo&(pScheme|pPath) != 0 || b.pseudo&pAuthority == 0 {
			return false
		}
	} else if b.pseudo&(pScheme|pPath) != pScheme|pPath ||
		string(scheme) != "http" && string(scheme) != "https" ||
		!validPath(path, string(method) == http.MethodOptions) {
		return false
	}
	if b.host {
		// A Host field must agree with :authority (8.3.1), and it is the
		// authority when there is none.
		h := st.req.get("Host")
		if b.pseudo&pAuthority != 0 && string(h) != string(authority) {
			return false
		}
		authority = h
	}
	if bytes.IndexByte(authority, '@') >= 0 && (string(scheme) == "http" || string(scheme) == "https") {
		return false // no userinfo (8.3.1)
	}
	st.req.joinCookies()
	return true
}

// validMethod reports whether m is a token (RFC 9110, 9.1).
func validMethod(m []byte) bool {
	return len(m) > 0 && httpguts.ValidHeaderFieldName(bstr(m))
}

// validPath reports whether p is an origin-form target (RFC 9112, 3.2.1:
// "/" and then no CTL, SP or DEL, the percent escapes of the path
// well-formed as net/url requires), or "*" when star (OPTIONS) allows it.
func validPath(p []byte, star bool) bool {
	if len(p) == 0 {
		return false
	}
	if p[0] != '/' {
		return star && len(p) == 1 && p[0] == '*'
	}
	inQuery := false
	for i := 0; i < len(p); i++ {
		switch ch := p[i]; {
		case ch <= ' ' || ch == 0x7f:
			return false
		case ch == '?':
			inQuery = true
		case ch == '%' && !inQuery:
			if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
				return false
			}
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// closeIfDoneLocked forgets a stream both sides have ended.
func (st *stream) closeIfDoneLocked() {
	if st.localDone && st.remoteDone && !st.closed {
		c := st.c
		c.forgetLocked(st)
		st.closed = true
		c.closeIfDoneLocked()
	}
	st.maybeReleaseLocked()
}

// abortLocked ends the stream now: reset, or its connection gone.
func (st *stream) abortLocked() {
	st.closed, st.aborted = true, true
	if st.done != nil {
		select {
		case <-st.done:
		default:
			close(st.done)
		}
	}
	st.outBytes, st.outLeft = nil, 0
	if st.outFile != nil {
		st.outFile.Close()
		st.outFile = nil
	}
	st.cond.Broadcast()
	st.fireGoneLocked()
	st.maybeReleaseLocked()
}

// fireGoneLocked runs the functions AfterClientGone registered, each on a
// goroutine of its own (they may take locks of their own, or c.mu).
func (st *stream) fireGoneLocked() {
	for i, w := range st.gone {
		if !w.done {
			w.done = true
			go w.f()
		}
		st.gone[i] = nil
	}
	st.gone = st.gone[:0]
}

func (st *stream) maybeReleaseLocked() {
	if st.closed && st.handlerDone && !st.queued {
		st.release()
	}
}

// finishLocked ends the response after its last DATA (or HEADERS): a
// request body still coming is not wanted (RST_STREAM NO_ERROR, 8.1).
func (st *stream) finishLocked() {
	st.localDone = true
	if !st.remoteDone && !st.closed {
		// The rest of the body is read and dropped (onData) while the
		// client has credit, so that a malformed one is still told and
		// its stream's frames still checked; a body declared longer than
		// that credit is refused now, with RST_STREAM NO_ERROR (8.1), as
		// is one that uses the credit up.
		c := st.c
		c.connHeld -= int32(len(st.in) - st.inOff)
		c.returnConnLocked(int32(len(st.in) - st.inOff))
		st.in, st.inOff = st.in[:0], 0
		if st.recvWindow == 0 || st.declared >= 0 && st.declared-st.received > int64(st.recvWindow) {
			c.resetLocked(st, http2.ErrCodeNo)
			return
		}
		st.draining = true
		c.draining++
	}
	st.closeIfDoneLocked()
}

func (st *stream) hasPending() bool { return len(st.outBytes) > 0 || st.outLeft > 0 || st.waiting }

// returnLocked gives the client back n bytes of stream credit, in batches.
func (st *stream) returnLocked(n int32) {
	if st.remoteDone || st.closed {
		return
	}
	st.unack += n
	if st.unack >= st.c.o.StreamWindow/4 {
		st.c.wbuf = appendWindowUpdate(st.c.wbuf, st.id, uint32(st.unack))
		st.recvWindow += st.unack
		st.unack = 0
	}
}

// pumpLocked writes the stream's pending DATA within the credit; it
// reports whether the stream is off the ready list (done, or out of
// credit until a WINDOW_UPDATE).
func (st *stream) pumpLocked() bool {
	c := st.c
	off := func() bool { st.queued = false; st.maybeReleaseLocked(); return true }
	if st.closed || st.aborted {
		return off()
	}
	if st.waiting {
		st.cond.Broadcast()
		return off()
	}
	for st.outLeft > 0 || len(st.outBytes) > 0 {
		left := int64(len(st.outBytes))
		if st.outFile != nil {
			left = st.outLeft
		}
		n := min(left, int64(c.maxFrame), st.sendWindow, c.sendWindow)
		if n <= 0 {
			return off()
		}
		if len(c.wbuf) >= flushAt {
			return false
		}
		var flags http2.Flags
		if n == left && st.outEnd {
			flags = http2.FlagDataEndStream
		}
		c.wbuf = appendFrameHeader(c.wbuf, int(n), http2.FrameData, flags, st.id)
		if st.outFile != nil {
			at := len(c.wbuf)
			c.wbuf = append(c.wbuf, make([]byte, n)...)
			m, err := st.outFile.ReadAt(c.wbuf[at:], st.outOff)
			if int64(m) < n {
				_ = err
				c.wbuf = c.wbuf[:at-9]
				c.resetLocked(st, http2.ErrCodeInternal)
				return off()
			}
			st.outOff += n
			st.outLeft -= n
		} else {
			c.wbuf = append(c.wbuf, st.outBytes[:n]...)
			st.outBytes = st.outBytes[n:]
		}
		st.sendWindow -= n
		c.sendWindow -= n
	}
	if st.outFile != nil {
		st.outFile.Close()
		st.outFile = nil
	}
	st.outBytes = nil
	if st.outEnd {
		st.finishLocked()
	}
	return off()
}

// runInline serves a complete request on the read loop's goroutine; it
// reports whether the handler took that goroutine (WillBlock).
func (c *conn) runInline(st *stream) bool {
	st.inline = true
	return c.serveStream(st)
}

// startDetached serves a request with a body on a goroutine of its own,
// so that the read loop can feed it the body.
func (c *conn) startDetached(st *stream) {
	c.mu.Lock()
	c.handlers++
	c.mu.Unlock()
	c.srv.wg.Add(1)
	go func() {
		defer c.srv.wg.Done()
		c.serveStream(st)
	}()
}

var errHeaderTooLarge = exchange.Errorf(http.StatusRequestHeaderFieldsTooLarge, "request header fields too large")

// serveStream runs the handler and commits the response.
func (c *conn) serveStream(st *stream) (handedOff bool) {
	var err error
	if st.tooBig {
		err = errHeaderTooLarge
	} else {
		err = c.o.Handler.ServeExchange(st)
	}
	if err != nil {
		c.o.OnError(st, err)
	}
	st.commit()
	handedOff = st.handedOff
	if !st.inline {
		c.pumpAndFlush()
	}
	c.mu.Lock()
	if !st.inline {
		c.handlers--
	}
	st.handlerDone = true
	st.maybeReleaseLocked()
	c.mu.Unlock()
	return handedOff
}

// WillBlock is called (through exchange.WillBlock) by a handler about to
// wait on something other than the client: an upstream, say. A handler
// running on the read loop's goroutine keeps it, and a new goroutine
// takes over reading the connection, so that its other streams go on.
func (st *stream) WillBlock() {
	if !st.inline {
		return
	}
	st.inline, st.handedOff = false, true
	c := st.c
	c.mu.Lock()
	c.handlers++
	c.mu.Unlock()
	c.srv.wg.Add(1)
	go func() {
		defer c.srv.wg.Done()
		c.loop()
	}()
}

func bodyAllowed(status int) bool {
	return !(status >= 100 && status < 200) && status != 204 && status != 304
}

// commit writes the response the handler described.
func (st *stream) commit() {
	c := st.c
	if st.tunnel {
		return // Upgrade answered, and the tunnel is over
	}
	if st.Protocol() != nil && st.status >= 200 && st.status < 300 {
		// A 2xx answer to an extended CONNECT opens a tunnel (RFC 8441,
		// 5); a handler that did not take the stream with Upgrade does
		// not support the protocol.
		st.ResetBody()
		st.resp.reset()
		st.status = http.StatusNotImplemented
		st.resp.add("Content-Type", "text/plain; charset=utf-8", false)
		st.SetBody(notImplemented)
	}
	head := string(st.pseudoValue(0)) == http.MethodHead
	allowed := bodyAllowed(st.status)
	size := int64(-1)
	switch {
	case st.src.File != nil:
		size = st.src.N
	case st.src.Reader != nil, st.src.Stream != nil:
		size = st.src.Size
	default:
		size = int64(len(st.bodyRef))
	}
	produce := !head && allowed && (st.src.Reader != nil || st.src.Stream != nil)
	if !allowed {
		st.resp.del("Content-Length")
	} else if size >= 0 {
		st.resp.del("Content-Length")
		var nb [20]byte
		st.resp.add("Content-Length", bstr(strconv.AppendInt(nb[:0], size, 10)), false)
	}
	c.mu.Lock()
	if st.closed {
		c.mu.Unlock()
		return // reset meanwhile; release closes what the body holds
	}
	switch {
	case produce:
		c.writeHeadersLocked(st, false)
	case head || !allowed || size == 0:
		c.writeHeadersLocked(st, true)
		st.finishLocked()
	case st.src.File != nil:
		c.writeHeadersLocked(st, false)
		st.outFile, st.outOff, st.outLeft, st.outEnd = st.src.File, st.src.Off, st.src.N, true
		st.src.File = nil
		c.markReadyLocked(st)
		c.pumpLockedFor(st)
	default:
		c.writeHeadersLocked(st, false)
		st.outBytes, st.outEnd = st.bodyRef, true
		c.markReadyLocked(st)
		c.pumpLockedFor(st)
	}
	c.mu.Unlock()
	if !produce {
		return
	}
	st.WillBlock() // a producer may wait on a peer or on credit
	c.flush()
	w := streamWriter{st}
	if st.src.Reader != nil {
		st.copyReader(w)
	} else {
		fn := st.src.Stream
		st.src.Stream = nil
		_ = fn(w)
		st.endData(nil)
	}
}

// pumpLockedFor pumps st at once when it is first on the list, so that a
// small response leaves in the same turn.
func (c *conn) pumpLockedFor(st *stream) {
	if len(c.wbuf) < flushAt {
		if st.pumpLocked() {
			for i, s := range c.ready {
				if s == st {
					c.ready = append(c.ready[:i], c.ready[i+1:]...)
					break
				}
			}
		}
	}
}

var copyBufPool = sync.Pool{New: func() any { return new([16 << 10]byte) }}

// copyReader sends SendReader's body, then its trailers.
func (st *stream) copyReader(w streamWriter) {
	r := st.src.Reader
	defer func() {
		closeReader(r)
		st.src.Reader = nil
	}()
	buf := copyBufPool.Get().(*[16 << 10]byte)
	defer copyBufPool.Put(buf)
	size, left := st.src.Size, st.src.Size
	for size < 0 || left > 0 {
		p := buf[:]
		if size >= 0 && int64(len(p)) > left {
			p = p[:left]
		}
		n, err := r.Read(p)
		if n > 0 {
			if _, werr := w.Write(p[:n]); werr != nil {
				return
			}
			left -= int64(n)
			if size < 0 {
				_ = w.Flush()
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			st.c.resetStream(st.id, http2.ErrCodeInternal)
			st.c.flush()
			return
		}
	}
	tr, _ := r.(exchange.TrailerReader)
	if tr != nil && size >= 0 {
		var one [1]byte
		if n, err := r.Read(one[:]); n > 0 || err != io.EOF {
			tr = nil
		}
	}
	st.endData(tr)
}

// endData ends a produced body: trailers (HEADERS with END_STREAM) or an
// empty DATA with END_STREAM.
func (st *stream) endData(tr exchange.TrailerReader) {
	c := st.c
	c.mu.Lock()
	if st.closed {
		c.mu.Unlock()
		return
	}
	var t fields
	if tr != nil {
		tr.VisitTrailers(func(name, value []byte) { t.addBytes(name, value) })
	}
	if len(t.kv) > 0 {
		saved := st.resp
		st.resp, st.status = t, 0
		c.writeHeadersLocked(st, true)
		st.resp = saved
	} else {
		c.wbuf = appendFrameHeader(c.wbuf, 0, http2.FrameData, http2.FlagDataEndStream, st.id)
	}
	st.finishLocked()
	c.mu.Unlock()
	c.flush()
}

// streamWriter is the StreamWriter of a produced body: DATA frames, each
// waiting for credit.
type streamWriter struct{ st *stream }

var errStreamClosed = errors.New("h2: stream closed")

func (w streamWriter) Write(p []byte) (int, error) {
	st := w.st
	c := st.c
	written := 0
	c.mu.Lock()
	defer c.mu.Unlock()
	var timer *time.Timer
	var deadline time.Time
	for len(p) > 0 {
		if st.closed || c.closed || st.tunnelShut {
			return written, errStreamClosed
		}
		n := min(int64(len(p)), int64(c.maxFrame), st.sendWindow, c.sendWindow)
		if n <= 0 {
			if c.o.WriteTimeout > 0 {
				if deadline.IsZero() {
					deadline = time.Now().Add(c.o.WriteTimeout)
					timer = time.AfterFunc(c.o.WriteTimeout, func() {
						c.mu.Lock()
						st.cond.Broadcast()
						c.mu.Unlock()
					})
					defer timer.Stop()
				} else if !time.Now().Before(deadline) {
					c.resetLocked(st, http2.ErrCodeCancel)
					return written, os.ErrDeadlineExceeded
				}
			}
			st.waiting = true
			c.markReadyLocked(st)
			if len(c.wbuf) > 0 {
				c.mu.Unlock()
				c.flush()
				c.mu.Lock()
				continue
			}
			st.cond.Wait()
			st.waiting = false
			continue
		}
		c.wbuf = appendFrameHeader(c.wbuf, int(n), http2.FrameData, 0, st.id)
		c.wbuf = append(c.wbuf, p[:n]...)
		st.sendWindow -= n
		c.sendWindow -= n
		p = p[n:]
		written += int(n)
		if len(c.wbuf) >= flushAt {
			c.mu.Unlock()
			c.flush()
			c.mu.Lock()
		}
	}
	return written, nil
}

func (w streamWriter) Flush() error {
	w.st.c.flush()
	return nil
}

// writeHeadersLocked encodes the status and the response fields (or
// trailers, when status is 0) and writes them as HEADERS and
// CONTINUATION frames. The encoder keeps no dynamic table (table size 0):
// no field is retained past this call, so values are passed without copy.
func (c *conn) writeHeadersLocked(st *stream, endStream bool) {
	c.hbuf.b = c.hbuf.b[:0]
	e := c.henc
	if st.status != 0 {
		_ = e.WriteField(hf(":status", statusText(st.status)))
		if st.resp.get("Date") == nil {
			_ = e.WriteField(hf("date", bstr(date())))
		}
	}
	for i := range st.resp.kv {
		name := st.resp.name(i)
		if connectionSpecific(name) {
			continue
		}
		low := lowerInto(c.lower[:0], name)
		_ = e.WriteField(hf(bstr(low), bstr(st.resp.value(i))))
	}
	blk := c.hbuf.b
	first := true
	for first || len(blk) > 0 {
		n := min(len(blk), c.maxFrame)
		var flags http2.Flags
		if n == len(blk) {
			flags |= http2.FlagHeadersEndHeaders
		}
		t := http2.FrameContinuation
		if first {
			t = http2.FrameHeaders
			if endStream {
				flags |= http2.FlagHeadersEndStream
			}
		}
		c.wbuf = appendFrameHeader(c.wbuf, n, t, flags, st.id)
		c.wbuf = append(c.wbuf, blk[:n]...)
		blk = blk[n:]
		first = false
	}
}

func connectionSpecific(name []byte) bool {
	switch len(name) {
	case 10:
		return equalFold(name, "connection") || equalFold(name, "keep-alive")
	case 7:
		return equalFold(name, "upgrade")
	case 17:
		return equalFold(name, "transfer-encoding")
	case 16:
		return equalFold(name, "proxy-connection")
	}
	return false
}

// bstr is b as a string, without copying; b must not change while it is
// used.
func bstr(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// sb is s as bytes, without copying; they must not be modified.
func sb(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

func closeReader(r io.Reader) {
	if c, ok := r.(io.Closer); ok {
		_ = c.Close()
	}
}

// Exchange.

func (st *stream) Context() context.Context {
	if st.ctxOver != nil {
		return st.ctxOver
	}
	st.c.mu.Lock()
	st.ctxTaken = true
	st.c.mu.Unlock()
	return streamCtx{st}
}
func (st *stream) SetContext(ctx context.Context) { st.ctxOver = ctx }

// streamCtx is the stream as a context.Context: cancelled when the
// stream is reset or its connection ends. Done's channel is made only
// when asked for.
type streamCtx struct{ st *stream }

func (s streamCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (s streamCtx) Done() <-chan struct{} {
	st := s.st
	st.c.mu.Lock()
	defer st.c.mu.Unlock()
	if st.done == nil {
		st.done = make(chan struct{})
		if st.aborted {
			close(st.done)
		}
	}
	return st.done
}
func (s streamCtx) Err() error {
	st := s.st
	st.c.mu.Lock()
	defer st.c.mu.Unlock()
	if st.aborted {
		return context.Canceled
	}
	return nil
}
func (s streamCtx) Value(key any) any {
	if key == http.LocalAddrContextKey {
		return s.st.c.nc.LocalAddr()
	}
	return nil
}

func (st *stream) ClientGone() bool { return streamCtx{st}.Err() != nil }

func (st *stream) ClientWatch() func() bool {
	gen, c := st.gen, st.c
	c.mu.Lock()
	st.ctxTaken = true // the func may outlive the stream: see release
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return st.gen != gen || st.aborted || c.closed
	}
}

// goneWatch is one AfterClientGone registration; done (c.mu) once f has
// been started or the registration stopped.
type goneWatch struct {
	f    func()
	done bool
}

// AfterClientGone (exchange.AfterClientGone) runs f once the stream is
// reset by the client or its connection ends, or at once when it already
// has. The stop function touches only its own registration and the
// connection, so it stays safe after the stream is recycled.
func (st *stream) AfterClientGone(f func()) func() bool {
	c := st.c
	w := &goneWatch{f: f}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.aborted || c.closed {
		w.done = true
		go f()
	} else {
		// Stopped registrations are dropped here, so that a handler that
		// registers once per wait keeps a short list.
		live := st.gone[:0]
		for _, g := range st.gone {
			if !g.done {
				live = append(live, g)
			}
		}
		clear(st.gone[len(live):])
		st.gone = append(live, w)
	}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if w.done {
			return false
		}
		w.done = true
		return true
	}
}

func (st *stream) Method() []byte { return st.pseudoValue(0) }
func (st *stream) SetMethod(m string) {
	st.pidx[0] = int8(len(st.pseudo.kv))
	st.pseudo.add("", m, false)
}
func (st *stream) RequestURI() []byte { return st.pseudoValue(3) }
func (st *stream) Path() []byte {
	u := st.pseudoValue(3)
	if i := bytes.IndexByte(u, '?'); i >= 0 {
		return u[:i]
	}
	return u
}
func (st *stream) Query() []byte {
	u := st.pseudoValue(3)
	if i := bytes.IndexByte(u, '?'); i >= 0 {
		return u[i+1:]
	}
	return nil
}
func (st *stream) SetRequestURI(uri string) {
	st.pidx[3] = int8(len(st.pseudo.kv))
	st.pseudo.add("", uri, false)
}
func (st *stream) Host() []byte {
	if h := st.pseudoValue(2); h != nil {
		return h
	}
	return st.req.get("Host")
}
func (st *stream) Proto() string { return "HTTP/2.0" }
func (st *stream) IsTLS() bool   { return st.c.isTLS }
func (st *stream) RemoteAddr() net.Addr {
	if a := st.Client(); a != nil {
		return a
	}
	return st.c.nc.RemoteAddr()
}
func (st *stream) Peer() net.Addr                           { return st.c.nc.RemoteAddr() }
func (st *stream) LocalAddr() net.Addr                      { return st.c.nc.LocalAddr() }
func (st *stream) TLSConnectionState() *tls.ConnectionState { return st.c.tls }
func (st *stream) Multiplexed() bool                        { return true }

var emptyValue = []byte{}

var notImplemented = []byte("extended CONNECT: protocol not supported here\n")

func (st *stream) RequestHeader(name string) []byte {
	if equalFold(sb(name), "host") {
		if h := st.Host(); h != nil {
			return nonNil(h)
		}
		return nil
	}
	if v := st.req.get(name); v != nil {
		return nonNil(v)
	}
	return nil
}

func nonNil(b []byte) []byte {
	if b == nil || len(b) == 0 {
		return emptyValue
	}
	return b
}

func (st *stream) VisitRequestHeaders(fn func(name, value []byte)) {
	if h := st.pseudoValue(2); h != nil {
		fn(hostName, nonNil(h))
	}
	for i := range st.req.kv {
		fn(st.req.name(i), nonNil(st.req.value(i)))
	}
}

var hostName = []byte("Host")

func (st *stream) SetRequestHeader(name, value string) {
	if equalFold(sb(name), "host") {
		st.pidx[2] = int8(len(st.pseudo.kv))
		st.pseudo.add("", value, false)
		st.req.del("Host")
		return
	}
	st.req.set(name, value)
}
func (st *stream) AddRequestHeader(name, value string) { st.req.add(name, value, true) }
func (st *stream) DelRequestHeader(name string)        { st.req.del(name) }

func (st *stream) RequestBody() io.Reader {
	if st.body != nil {
		return st.body
	}
	return bodyOf{st}
}

func (st *stream) ContentLength() int64 { return st.declared }

func (st *stream) SetRequestBody(b []byte) {
	st.bodyReader.Reset(b)
	st.body = &st.bodyReader
	st.declared = int64(len(b))
	st.req.set("Content-Length", strconv.Itoa(len(b)))
}

// LimitRequestBody (exchange.LimitRequestBody) fails the body past n.
func (st *stream) LimitRequestBody(n int64) {
	st.body = exchange.NewLimitedBody(st.RequestBody(), n)
}

// SetReadDeadline bounds the waits for request body data.
func (st *stream) SetReadDeadline(t time.Time) error {
	st.readDL = t
	return nil
}

func (st *stream) VisitRequestTrailers(fn func(name, value []byte)) {
	st.c.mu.Lock()
	done := st.remoteDone
	st.c.mu.Unlock()
	if done {
		st.trailers.visit(fn)
	}
}

// bodyOf reads the request body as the read loop receives it.
type bodyOf struct{ st *stream }

var errReset = errors.New("h2: stream reset by the client")

func (b bodyOf) Read(p []byte) (int, error) {
	st := b.st
	c := st.c
	c.mu.Lock()
	var timer *time.Timer
	for len(st.in) == st.inOff {
		if st.remoteDone {
			c.mu.Unlock()
			return 0, io.EOF
		}
		if st.aborted {
			c.mu.Unlock()
			return 0, errReset
		}
		if st.tunnelShut {
			c.mu.Unlock()
			return 0, net.ErrClosed
		}
		dl := st.readDL
		if dl.IsZero() && c.o.ReadTimeout > 0 && !st.tunnel { // a tunnel may idle
			if timer == nil {
				dl = time.Now().Add(c.o.ReadTimeout)
				st.readDL = dl // per wait; cleared below
				defer func() { st.readDL = time.Time{} }()
			}
		}
		if !dl.IsZero() {
			if !time.Now().Before(dl) {
				c.mu.Unlock()
				return 0, os.ErrDeadlineExceeded
			}
			if timer == nil {
				timer = time.AfterFunc(time.Until(dl), func() {
					c.mu.Lock()
					st.cond.Broadcast()
					c.mu.Unlock()
				})
				defer timer.Stop()
			}
		}
		if len(p) == 0 {
			c.mu.Unlock()
			return 0, nil
		}
		st.cond.Wait()
	}
	n := copy(p, st.in[st.inOff:])
	st.inOff += n
	if st.inOff == len(st.in) {
		st.in, st.inOff = st.in[:0], 0
	}
	c.connHeld -= int32(n)
	c.returnConnLocked(int32(n))
	st.returnLocked(int32(n))
	flush := len(c.wbuf) > 0
	c.mu.Unlock()
	if flush {
		c.flush()
	}
	return n, nil
}

// Response.

func (st *stream) Status() int        { return st.status }
func (st *stream) SetStatus(code int) { st.status = code }
func (st *stream) ResponseHeader(name string) []byte {
	return st.resp.get(name)
}
func (st *stream) VisitResponseHeaders(fn func(name, value []byte)) { st.resp.visit(fn) }
func (st *stream) SetResponseHeader(name, value string)             { st.resp.set(name, value) }
func (st *stream) SetResponseHeaderBytes(name string, value []byte) {
	st.resp.set(name, bstr(value))
}
func (st *stream) AddResponseHeader(name, value string) {
	if singleValued(name) {
		st.resp.set(name, value)
		return
	}
	st.resp.add(name, value, true)
}
func (st *stream) AddResponseHeaderBytes(name, value []byte) {
	st.AddResponseHeader(bstr(name), bstr(value))
}
func (st *stream) DelResponseHeader(name string) { st.resp.del(name) }

// singleValued: the fields fasthttp keeps once; adding one replaces it on
// every engine.
func singleValued(name string) bool {
	return len(name) == 12 && equalFold(sb(name), "Content-Type") ||
		len(name) == 6 && equalFold(sb(name), "Server")
}

func (st *stream) SetBody(b []byte) {
	st.ResetBody()
	st.bodyRef = b
}

func (st *stream) Write(p []byte) (int, error) {
	if st.src.Pending() {
		st.ResetBody()
	}
	if len(st.own) == 0 && len(st.bodyRef) > 0 {
		st.own = append(st.own[:0], st.bodyRef...) // a body set, then written to
	}
	st.own = append(st.own, p...)
	st.bodyRef = st.own
	return len(p), nil
}

func (st *stream) SendFile(f *os.File, off, n int64) {
	st.ResetBody()
	if string(st.Method()) == http.MethodHead {
		f.Close()
		st.src.N = n
		st.src.File = nil
		st.src.Size = n
		st.src.Reader = eofReader{}
		return
	}
	st.src.File, st.src.Off, st.src.N = f, off, n
}

// eofReader stands for a HEAD response's body of known size.
type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

func (st *stream) Stream(size int64, fn func(w exchange.StreamWriter) error) {
	st.ResetBody()
	st.src.Stream, st.src.Size = fn, size
}

func (st *stream) SendReader(r io.Reader, size int64) {
	st.ResetBody()
	st.src.Reader, st.src.Size = r, size
}

func (st *stream) ResponseBody() []byte {
	if st.src.Pending() {
		return nil
	}
	return st.bodyRef
}

func (st *stream) ResetBody() {
	st.src.Release()
	st.bodyRef = nil
	st.own = st.own[:0]
}

func (st *stream) BufferBodyLimit(limit int64, deadline time.Time) (bool, error) {
	if string(st.Method()) == http.MethodHead {
		return true, nil
	}
	b, fits, ok, err := st.src.Buffer(limit, deadline)
	if !ok {
		return true, nil
	}
	st.ResetBody()
	if err != nil || !fits {
		return fits, err
	}
	st.own = append(st.own[:0], b...)
	st.bodyRef = st.own
	return true, nil
}

// Protocol is an extended CONNECT's :protocol (RFC 8441), nil for any
// other request (exchange.ConnectProtocol).
func (st *stream) Protocol() []byte {
	if string(st.Method()) != http.MethodConnect {
		return nil
	}
	return st.pseudoValue(4)
}
