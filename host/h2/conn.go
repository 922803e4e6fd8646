package h2

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

const (
	preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	// maxReadFrame is the largest frame payload read: SETTINGS_MAX_FRAME_SIZE
	// is left at its initial value, 16 KiB.
	maxReadFrame = 16 << 10
	// flushAt is the size of buffered output written before more is added.
	flushAt   = 64 << 10
	maxWindow = 1<<31 - 1
)

// connError ends the connection with GOAWAY and the code.
type connError http2.ErrCode

func (e connError) Error() string { return "h2: connection error: " + http2.ErrCode(e).String() }

// conn is one HTTP/2 connection.
type conn struct {
	srv   *Server
	o     *Options
	nc    net.Conn
	br    *bufio.Reader
	tls   *tls.ConnectionState
	isTLS bool

	// Read loop only.
	hdec        *hpack.Decoder
	hdr         headerBlock // the header block being read
	lastID      uint32      // highest client stream ID seen
	resets      rate
	control     rate
	emptyData   rate // DATA frames without data or END_STREAM
	closedData  rate // DATA frames on closed streams, each answered with RST_STREAM
	handedOff   bool // a blocking handler took the loop's goroutine
	idleSet     bool
	peerSawAck  bool
	firstHeader bool          // the first request's headers are in
	upgraded    bool          // the connection came by Upgrade: h2c; the preface is still to come
	peerGoAway  bool          // the client sent GOAWAY
	done        chan struct{} // closed when the connection has ended

	mu         sync.Mutex
	streams    map[uint32]*stream
	ready      []*stream // streams with output waiting for credit
	sendWindow int64     // connection-level credit to send
	initWindow int32     // peer's SETTINGS_INITIAL_WINDOW_SIZE
	maxFrame   int       // peer's SETTINGS_MAX_FRAME_SIZE
	recvUnack  int32     // connection-level bytes consumed, not yet returned
	connHeld   int32     // request body bytes buffered in streams, not yet read
	draining   int       // streams whose response is out, their body still coming
	wbuf       []byte
	spare      []byte
	henc       *hpack.Encoder
	hbuf       hbuf
	goingAway  bool
	goAwayID   uint32
	closed     bool
	werr       error
	handlers   int // handler goroutines running apart from the read loop
	lower      [64]byte

	wmu sync.Mutex // held while writing to nc, so that flushes keep order
}

type hbuf struct{ b []byte }

func (h *hbuf) Write(p []byte) (int, error) { h.b = append(h.b, p...); return len(p), nil }

// rate counts events in a fixed window.
type rate struct {
	start time.Time
	n     int
}

// add counts one event and reports whether more than max fell in the
// current window.
func (r *rate) add(max int, window time.Duration) bool {
	now := time.Now()
	if now.Sub(r.start) > window {
		r.start, r.n = now, 0
	}
	r.n++
	return r.n > max
}

var brPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 16<<10) }}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		srv: s, o: &s.o, nc: nc,
		streams:    map[uint32]*stream{},
		sendWindow: 65535,
		initWindow: 65535,
		maxFrame:   16384,
		done:       make(chan struct{}),
	}
	c.tls = tlsState(nc)
	c.isTLS = c.tls != nil || s.o.TLS
	c.hdec = hpack.NewDecoder(4096, c.onField)
	// A field over MaxHeaderBytes is decoded (and answered 431) as long
	// as it fits the bound on a header block (maxBlock), Huffman-coded.
	c.hdec.SetMaxStringLength(2 * c.maxBlock())
	c.henc = hpack.NewEncoder(&c.hbuf)
	c.henc.SetMaxDynamicTableSizeLimit(0) // see encodeHeaders
	return c
}

// serve runs the connection: the preface, then the read loop.
func (c *conn) serve() {
	c.br = brPool.Get().(*bufio.Reader)
	c.br.Reset(c.nc)
	_ = c.nc.SetReadDeadline(time.Now().Add(c.o.ReadHeaderTimeout))
	if !c.readPreface() {
		return
	}
	c.mu.Lock()
	c.wbuf = appendSettings(c.wbuf, c.o)
	c.wbuf = appendWindowUpdate(c.wbuf, 0, uint32(c.o.ConnWindow-65535))
	c.mu.Unlock()
	c.loop()
}

func (c *conn) readPreface() bool {
	var p [len(preface)]byte
	if _, err := io.ReadFull(c.br, p[:]); err != nil || string(p[:]) != preface {
		c.end(nil)
		return false
	}
	return true
}

// loop reads frames until the connection ends, or a handler running on
// this goroutine takes it over (WillBlock), having started another loop.
func (c *conn) loop() {
	if c.upgraded {
		// After an Upgrade: h2c, the client's preface follows the 101,
		// once the first request has been answered.
		c.upgraded = false
		c.pumpAndFlush()
		_ = c.nc.SetReadDeadline(time.Now().Add(c.o.ReadHeaderTimeout))
		if !c.readPreface() {
			return
		}
	}
	for {
		if c.br.Buffered() == 0 {
			c.pumpAndFlush()
			c.mu.Lock()
			done := (c.goingAway || c.peerGoAway) && len(c.streams) == 0
			c.mu.Unlock()
			if done {
				c.end(nil) // GOAWAY sent or received, and no stream left
				return
			}
			c.setIdleDeadline()
		}
		fh, err := http2.ReadFrameHeader(c.br)
		if err != nil {
			c.end(err)
			return
		}
		if err = c.frame(fh); err != nil {
			if err == errHandedOff {
				return
			}
			c.end(err)
			return
		}
	}
}

// setIdleDeadline sets the read deadline for what the loop waits for:
// the first request (read_header_timeout), the next one when no stream is
// open (idle_timeout), or a stream's response blocked on flow-control
// credit (write_timeout).
func (c *conn) setIdleDeadline() {
	if !c.firstHeader || c.hdr.st != nil || c.hdr.active {
		return // the header deadline stands
	}
	c.mu.Lock()
	// Streams only draining a body do not hold the connection open.
	n, blocked := len(c.streams)-c.draining, len(c.ready) > 0
	c.mu.Unlock()
	switch {
	case n == 0:
		if !c.idleSet {
			c.idleSet = true
			var t time.Time
			if c.o.IdleTimeout > 0 {
				t = time.Now().Add(c.o.IdleTimeout)
			}
			_ = c.nc.SetReadDeadline(t)
		}
	case blocked && c.o.WriteTimeout > 0:
		c.idleSet = false
		_ = c.nc.SetReadDeadline(time.Now().Add(c.o.WriteTimeout))
	default:
		if c.idleSet {
			c.idleSet = false
			_ = c.nc.SetReadDeadline(time.Time{})
		}
	}
}

// end closes the connection: with GOAWAY for a connection error, at once
// otherwise. Handlers still running see their streams reset.
func (c *conn) end(err error) {
	var ce connError
	if errors.As(err, &ce) {
		c.mu.Lock()
		c.wbuf = appendGoAway(c.wbuf, c.lastID, http2.ErrCode(ce))
		c.mu.Unlock()
		c.flush()
	} else {
		c.flush()
	}
	c.mu.Lock()
	c.closed = true
	for _, st := range c.streams {
		c.forgetLocked(st)
		st.abortLocked()
	}
	c.ready = c.ready[:0]
	c.mu.Unlock()
	if errors.As(err, &ce) {
		// Let the GOAWAY reach the client before the close.
		if tc, ok := c.nc.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		}
		_ = c.nc.SetReadDeadline(time.Now().Add(time.Second))
		var sink [512]byte
		for range 64 {
			if _, err := c.br.Read(sink[:]); err != nil {
				break
			}
		}
	}
	// No flush is writing once wmu is ours, and none starts after: they
	// see closed. nc may be released as soon as end returns.
	c.wmu.Lock()
	_ = c.nc.Close()
	c.wmu.Unlock()
	if c.br != nil {
		c.br.Reset(nil)
		brPool.Put(c.br)
		c.br = nil
	}
	c.srv.forget(c)
	close(c.done)
}

// goAway starts a graceful close: GOAWAY with the last stream taken, then
// the close once the streams in flight are done.
func (c *conn) goAway() {
	c.mu.Lock()
	if c.goingAway || c.closed {
		c.mu.Unlock()
		return
	}
	c.goingAway, c.goAwayID = true, c.lastIDLocked()
	c.wbuf = appendGoAway(c.wbuf, c.goAwayID, http2.ErrCodeNo)
	idle := len(c.streams) == 0
	c.mu.Unlock()
	c.flush()
	if idle {
		// Wake the loop, which ends; under mu and only while the
		// connection is open: once end has run, nc may be released
		// (fasthttp recycles a hijacked connection's wrapper).
		c.mu.Lock()
		if !c.closed {
			_ = c.nc.SetReadDeadline(time.Now())
		}
		c.mu.Unlock()
	}
}

func (c *conn) lastIDLocked() uint32 { return c.lastID }

// flush writes the buffered frames.
func (c *conn) flush() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	buf := c.wbuf
	if len(buf) == 0 || c.werr != nil || c.closed {
		c.mu.Unlock()
		return
	}
	c.wbuf, c.spare = c.spare[:0], nil
	c.mu.Unlock()
	if c.o.WriteTimeout > 0 {
		_ = c.nc.SetWriteDeadline(time.Now().Add(c.o.WriteTimeout))
	}
	_, err := c.nc.Write(buf)
	c.mu.Lock()
	if cap(buf) <= 2*flushAt {
		c.spare = buf[:0]
	}
	if err != nil && c.werr == nil {
		c.werr = err
		c.mu.Unlock()
		_ = c.nc.Close() // the read loop ends
		return
	}
	c.mu.Unlock()
}

// maxPumps bounds pumpAndFlush's turns: each but the last sends flushAt
// bytes of credit, and the credit a client can give between two reads of
// the loop is at most maxWindow.
const maxPumps = maxWindow/flushAt + 2

// pumpAndFlush writes what the streams waiting for credit may send, and
// flushes, until nothing more can go: the loop reads the next frame only
// then, so output left behind here would wait for the client's next frame
// (issue 21, finding 2).
func (c *conn) pumpAndFlush() {
	for range maxPumps {
		c.mu.Lock()
		more := c.pumpLocked()
		c.mu.Unlock()
		c.flush()
		if !more {
			return
		}
	}
}

// pumpLocked writes DATA for the ready streams within the flow-control
// credit, until flushAt bytes are buffered; it reports whether more could
// go once they are flushed.
func (c *conn) pumpLocked() bool {
	if c.closed {
		return false
	}
	for i := 0; i < len(c.ready); {
		st := c.ready[i]
		if len(c.wbuf) >= flushAt {
			return c.sendWindow > 0
		}
		if st.pumpLocked() {
			// Done, or waiting for its producer: off the list.
			c.ready[i] = c.ready[len(c.ready)-1]
			c.ready = c.ready[:len(c.ready)-1]
			continue
		}
		i++
	}
	// A stream still listed stopped at a full buffer (the others leave
	// the list), with credit left: it goes on after the flush. Returning
	// false here left the last stream's output until the client's next
	// frame.
	return len(c.ready) > 0 && c.sendWindow > 0
}

func (c *conn) markReadyLocked(st *stream) {
	if !st.queued {
		st.queued = true
		c.ready = append(c.ready, st)
	}
}

// frame handles one frame whose header was read.
func (c *conn) frame(fh http2.FrameHeader) error {
	if fh.Length > maxReadFrame {
		return connError(http2.ErrCodeFrameSize)
	}
	// The payload is read in place from the read buffer (16 KiB, the
	// largest frame): what outlives the frame (body data, field values)
	// is copied out before the next read.
	p, err := c.br.Peek(int(fh.Length))
	if err != nil {
		return err
	}
	_, _ = c.br.Discard(len(p))
	if c.hdr.active && fh.Type != http2.FrameContinuation {
		return connError(http2.ErrCodeProtocol)
	}
	if !c.peerSawAck && fh.Type != http2.FrameSettings {
		return connError(http2.ErrCodeProtocol) // the preface's SETTINGS comes first
	}
	switch fh.Type {
	case http2.FrameData:
		return c.onData(fh, p)
	case http2.FrameHeaders:
		return c.onHeaders(fh, p)
	case http2.FrameContinuation:
		return c.onContinuation(fh, p)
	case http2.FramePriority:
		if fh.StreamID == 0 {
			return connError(http2.ErrCodeProtocol)
		}
		if len(p) != 5 {
			c.resetStream(fh.StreamID, http2.ErrCodeFrameSize)
			return nil
		}
		if binary.BigEndian.Uint32(p)&(1<<31-1) == fh.StreamID {
			c.resetStream(fh.StreamID, http2.ErrCodeProtocol)
		}
		return nil // priorities are ignored (RFC 9113, 5.3.2)
	case http2.FrameRSTStream:
		return c.onReset(fh, p)
	case http2.FrameSettings:
		return c.onSettings(fh, p)
	case http2.FramePushPromise:
		return connError(http2.ErrCodeProtocol)
	case http2.FramePing:
		if fh.StreamID != 0 {
			return connError(http2.ErrCodeProtocol)
		}
		if len(p) != 8 {
			return connError(http2.ErrCodeFrameSize)
		}
		if fh.Flags.Has(http2.FlagPingAck) {
			return nil
		}
		if c.control.add(c.o.MaxControl, c.o.ResetWindow) {
			return connError(http2.ErrCodeEnhanceYourCalm)
		}
		c.mu.Lock()
		c.wbuf = appendFrameHeader(c.wbuf, 8, http2.FramePing, http2.FlagPingAck, 0)
		c.wbuf = append(c.wbuf, p...)
		c.mu.Unlock()
		return nil
	case http2.FrameGoAway:
		if fh.StreamID != 0 {
			return connError(http2.ErrCodeProtocol)
		}
		if len(p) < 8 {
			return connError(http2.ErrCodeFrameSize)
		}
		c.peerGoAway = true // the client opens no more streams
		return nil
	case http2.FrameWindowUpdate:
		return c.onWindowUpdate(fh, p)
	}
	return nil // unknown types are ignored (RFC 9113, 4.1)
}

func (c *conn) onSettings(fh http2.FrameHeader, p []byte) error {
	if fh.StreamID != 0 {
		return connError(http2.ErrCodeProtocol)
	}
	if fh.Flags.Has(http2.FlagSettingsAck) {
		if len(p) != 0 {
			return connError(http2.ErrCodeFrameSize)
		}
		return nil
	}
	if len(p)%6 != 0 {
		return connError(http2.ErrCodeFrameSize)
	}
	if c.peerSawAck && c.control.add(c.o.MaxControl, c.o.ResetWindow) {
		return connError(http2.ErrCodeEnhanceYourCalm)
	}
	c.peerSawAck = true
	c.mu.Lock()
	defer c.mu.Unlock()
	// Of the INITIAL_WINDOW_SIZE entries of one frame only the last
	// counts (the windows end the same): one walk over the streams per
	// frame, not per entry, which thousands of entries made seconds of
	// CPU (issue 21, finding 10).
	window := int64(-1)
	for ; len(p) > 0; p = p[6:] {
		id, v := http2.SettingID(binary.BigEndian.Uint16(p)), binary.BigEndian.Uint32(p[2:])
		switch id {
		case http2.SettingEnablePush, http2.SettingEnableConnectProtocol: // RFC 8441, 3
			if v > 1 {
				return connError(http2.ErrCodeProtocol)
			}
		case http2.SettingInitialWindowSize:
			if v > maxWindow {
				return connError(http2.ErrCodeFlowControl)
			}
			window = int64(v)
		case http2.SettingMaxFrameSize:
			if v < 16384 || v > 1<<24-1 {
				return connError(http2.ErrCodeProtocol)
			}
			c.maxFrame = int(min(v, 64<<10))
		}
	}
	if window >= 0 {
		if err := c.setInitWindowLocked(int32(window)); err != nil {
			return err
		}
	}
	c.wbuf = appendFrameHeader(c.wbuf, 0, http2.FrameSettings, http2.FlagSettingsAck, 0)
	return nil
}

// setInitWindowLocked applies a new SETTINGS_INITIAL_WINDOW_SIZE to the
// open streams (RFC 9113, 6.9.2).
func (c *conn) setInitWindowLocked(v int32) error {
	delta := int64(v) - int64(c.initWindow)
	c.initWindow = v
	if delta == 0 {
		return nil
	}
	for _, st := range c.streams {
		st.sendWindow += delta
		if st.sendWindow > maxWindow {
			return connError(http2.ErrCodeFlowControl)
		}
		if delta > 0 && st.hasPending() {
			c.markReadyLocked(st)
			st.cond.Broadcast()
		}
	}
	return nil
}

func (c *conn) onWindowUpdate(fh http2.FrameHeader, p []byte) error {
	if len(p) != 4 {
		return connError(http2.ErrCodeFrameSize)
	}
	inc := binary.BigEndian.Uint32(p) & (1<<31 - 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if fh.StreamID == 0 {
		if inc == 0 {
			return connError(http2.ErrCodeProtocol)
		}
		c.sendWindow += int64(inc)
		if c.sendWindow > maxWindow {
			return connError(http2.ErrCodeFlowControl)
		}
		for _, st := range c.streams {
			if st.hasPending() && st.sendWindow > 0 {
				c.markReadyLocked(st)
				st.cond.Broadcast()
			}
		}
		return nil
	}
	if fh.StreamID > c.lastID {
		return connError(http2.ErrCodeProtocol) // idle stream
	}
	st := c.streams[fh.StreamID]
	if st == nil {
		return nil // closed: allowed for a while
	}
	if inc == 0 {
		c.resetLocked(st, http2.ErrCodeProtocol)
		return nil
	}
	st.sendWindow += int64(inc)
	if st.sendWindow > maxWindow {
		c.resetLocked(st, http2.ErrCodeFlowControl)
		return nil
	}
	if st.hasPending() {
		c.markReadyLocked(st)
		st.cond.Broadcast()
	}
	return nil
}

func (c *conn) onReset(fh http2.FrameHeader, p []byte) error {
	if fh.StreamID == 0 {
		return connError(http2.ErrCodeProtocol)
	}
	if len(p) != 4 {
		return connError(http2.ErrCodeFrameSize)
	}
	if fh.StreamID > c.lastID {
		return connError(http2.ErrCodeProtocol)
	}
	c.mu.Lock()
	st := c.streams[fh.StreamID]
	if st != nil {
		c.forgetLocked(st)
		st.abortLocked()
		c.closeIfDoneLocked()
	}
	c.mu.Unlock()
	if st != nil && c.resets.add(c.o.MaxResets, c.o.ResetWindow) {
		return connError(http2.ErrCodeEnhanceYourCalm) // CVE-2023-44487
	}
	return nil
}

// resetStream sends RST_STREAM for id and forgets the stream.
func (c *conn) resetStream(id uint32, code http2.ErrCode) {
	c.mu.Lock()
	if st := c.streams[id]; st != nil {
		c.resetLocked(st, code)
	} else {
		c.wbuf = appendRST(c.wbuf, id, code)
	}
	c.mu.Unlock()
}

func (c *conn) resetLocked(st *stream, code http2.ErrCode) {
	c.wbuf = appendRST(c.wbuf, st.id, code)
	c.forgetLocked(st)
	st.abortLocked()
	c.closeIfDoneLocked()
}

// forgetLocked takes st out of the open streams.
func (c *conn) forgetLocked(st *stream) {
	if st.draining {
		st.draining = false
		c.draining--
	}
	delete(c.streams, st.id)
}

// closeIfDoneLocked ends a connection going away once its last stream is.
func (c *conn) closeIfDoneLocked() {
	if c.goingAway && len(c.streams) == 0 && !c.closed {
		_ = c.nc.SetReadDeadline(time.Now()) // the loop flushes and ends
	}
}

func (c *conn) onData(fh http2.FrameHeader, p []byte) error {
	if fh.StreamID == 0 {
		return connError(http2.ErrCodeProtocol)
	}
	if fh.StreamID > c.lastID {
		return connError(http2.ErrCodeProtocol)
	}
	n := int32(len(p)) // the whole frame counts against the windows
	data, err := unpad(fh, p)
	if err != nil {
		return err
	}
	if len(data) == 0 && !fh.Flags.Has(http2.FlagDataEndStream) && c.emptyData.add(c.o.MaxControl, c.o.ResetWindow) {
		// Empty DATA costs the client no credit: bounded as PINGs are.
		return connError(http2.ErrCodeEnhanceYourCalm)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Connection-level accounting: the client spends credit on every
	// DATA frame, the stream's gone or not.
	if n > c.o.ConnWindow-c.recvUnack-c.connBuffered() {
		return connError(http2.ErrCodeFlowControl)
	}
	st := c.streams[fh.StreamID]
	if st != nil && st.localDone && !st.remoteDone {
		// The response is out; the rest of the body is read and dropped,
		// within the credit the client had then (finishLocked).
		c.returnConnLocked(n)
		st.received += int64(len(data))
		end := fh.Flags.Has(http2.FlagDataEndStream)
		switch {
		case n > st.recvWindow:
			c.resetLocked(st, http2.ErrCodeFlowControl)
		case st.declared >= 0 && (st.received > st.declared || end && st.received != st.declared):
			c.resetLocked(st, http2.ErrCodeProtocol)
		case end:
			st.remoteDone = true
			st.closeIfDoneLocked()
		default:
			st.recvWindow -= n
			if st.recvWindow == 0 {
				c.resetLocked(st, http2.ErrCodeNo) // out of credit: stop sending
			}
		}
		return nil
	}
	if st == nil || st.remoteDone {
		c.returnConnLocked(n)
		// Each is answered with RST_STREAM: bounded as PINGs are, since
		// credit returned (or none spent) does not bound them.
		if c.closedData.add(c.o.MaxControl, c.o.ResetWindow) {
			return connError(http2.ErrCodeEnhanceYourCalm)
		}
		if st != nil {
			c.resetLocked(st, http2.ErrCodeStreamClosed)
		} else {
			c.wbuf = appendRST(c.wbuf, fh.StreamID, http2.ErrCodeStreamClosed)
		}
		return nil
	}
	if n > st.recvWindow {
		c.returnConnLocked(n)
		c.resetLocked(st, http2.ErrCodeFlowControl)
		return nil
	}
	st.recvWindow -= n
	st.received += int64(len(data))
	if st.declared >= 0 && st.received > st.declared {
		c.returnConnLocked(n)
		c.resetLocked(st, http2.ErrCodeProtocol)
		return nil
	}
	if pad := n - int32(len(data)); pad > 0 { // padding is credit returned at once
		c.returnConnLocked(pad)
		st.returnLocked(pad)
	}
	st.in = append(st.in, data...)
	c.connHeld += int32(len(data))
	if fh.Flags.Has(http2.FlagDataEndStream) {
		if st.declared >= 0 && st.received != st.declared {
			c.resetLocked(st, http2.ErrCodeProtocol)
			return nil
		}
		st.remoteDone = true
		st.closeIfDoneLocked()
	}
	st.cond.Broadcast()
	return nil
}

// connBuffered is the request body bytes held by streams, not yet read.
func (c *conn) connBuffered() int32 { return c.connHeld }

// returnConnLocked gives the client back n bytes of connection credit,
// in batches.
func (c *conn) returnConnLocked(n int32) {
	c.recvUnack += n
	if c.recvUnack >= c.o.ConnWindow/4 {
		c.wbuf = appendWindowUpdate(c.wbuf, 0, uint32(c.recvUnack))
		c.recvUnack = 0
	}
}

func unpad(fh http2.FrameHeader, p []byte) ([]byte, error) {
	if !fh.Flags.Has(http2.FlagDataPadded) {
		return p, nil
	}
	if len(p) == 0 {
		return nil, connError(http2.ErrCodeProtocol)
	}
	pad := int(p[0])
	if pad >= len(p) {
		return nil, connError(http2.ErrCodeProtocol)
	}
	return p[1 : len(p)-pad], nil
}
