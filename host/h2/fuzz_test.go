package h2

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// fuzzConn is a connection that reads its input, then io.EOF, and
// discards what is written.
type fuzzConn struct {
	r       *bytes.Reader
	written int
}

func (f *fuzzConn) Read(p []byte) (int, error)         { return f.r.Read(p) }
func (f *fuzzConn) Write(p []byte) (int, error)        { f.written += len(p); return len(p), nil }
func (f *fuzzConn) Close() error                       { return nil }
func (f *fuzzConn) LocalAddr() net.Addr                { return &net.TCPAddr{} }
func (f *fuzzConn) RemoteAddr() net.Addr               { return &net.TCPAddr{} }
func (f *fuzzConn) SetDeadline(t time.Time) error      { return nil }
func (f *fuzzConn) SetReadDeadline(t time.Time) error  { return nil }
func (f *fuzzConn) SetWriteDeadline(t time.Time) error { return nil }

// fuzzHandler reads the request body, then answers with a small body.
var fuzzHandler = exchange.HandlerFunc(func(x exchange.Exchange) error {
	if _, err := io.Copy(io.Discard, io.LimitReader(x.RequestBody(), 1<<20)); err != nil {
		return err
	}
	x.SetBody([]byte("ok"))
	return nil
})

// fuzzLimits are the engine's limits, small so that fuzzing reaches them.
func fuzzServer() *Server {
	return New(Options{Handler: fuzzHandler, MaxConcurrentStreams: 8, MaxHeaderBytes: 1024,
		StreamWindow: 4096, ConnWindow: 8192, MaxResets: 16, MaxControl: 16})
}

func frames(fn func(fr *http2.Framer, enc func(...string) []byte)) []byte {
	var b, hb bytes.Buffer
	fr := http2.NewFramer(&b, nil)
	fr.AllowIllegalWrites = true
	e := hpack.NewEncoder(&hb)
	fn(fr, func(kv ...string) []byte {
		hb.Reset()
		for i := 0; i+1 < len(kv); i += 2 {
			e.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
		}
		return bytes.Clone(hb.Bytes())
	})
	return b.Bytes()
}

var get = []string{":method", "GET", ":scheme", "http", ":authority", "a.test", ":path", "/"}

// FuzzFrames feeds the frame reader a connection's bytes after the
// preface: any sequence of frames is answered or refused, never a panic
// or a wait past the input.
func FuzzFrames(f *testing.F) {
	f.Add(frames(func(fr *http2.Framer, enc func(...string) []byte) {
		fr.WriteSettings()
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(get...), EndStream: true, EndHeaders: true})
	}))
	f.Add(frames(func(fr *http2.Framer, enc func(...string) []byte) {
		fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1})
		post := append([]string{}, get...)
		post[1] = "POST"
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(append(post, "content-length", "3")...), EndHeaders: true})
		fr.WriteData(1, false, []byte("ab"))
		fr.WriteWindowUpdate(1, 100)
		fr.WriteData(1, true, []byte("c"))
		fr.WritePing(false, [8]byte{1})
		fr.WriteRSTStream(3, http2.ErrCodeCancel)
	}))
	f.Add(frames(func(fr *http2.Framer, enc func(...string) []byte) {
		fr.WriteSettings()
		blk := enc(append(get, "x-a", "b")...)
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: blk[:3], EndStream: true})
		fr.WriteContinuation(1, true, blk[3:])
		fr.WritePriority(3, http2.PriorityParam{StreamDep: 1})
		fr.WriteGoAway(0, http2.ErrCodeNo, nil)
	}))
	f.Fuzz(func(t *testing.T, in []byte) {
		s := fuzzServer()
		c := &fuzzConn{r: bytes.NewReader(append([]byte(http2.ClientPreface), in...))}
		done := make(chan struct{})
		go func() {
			s.ServeConn(c)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the connection outlived its input")
		}
	})
}

// FuzzHPACK feeds the HPACK decoder, under the engine's limits, one
// header block split across HEADERS and CONTINUATION at a fuzzed point.
func FuzzHPACK(f *testing.F) {
	var hb bytes.Buffer
	e := hpack.NewEncoder(&hb)
	for i := 0; i+1 < len(get); i += 2 {
		e.WriteField(hpack.HeaderField{Name: get[i], Value: get[i+1]})
	}
	e.WriteField(hpack.HeaderField{Name: "cookie", Value: "a=1"})
	e.WriteField(hpack.HeaderField{Name: "cookie", Value: "b=2"})
	f.Add(bytes.Clone(hb.Bytes()), uint16(5))
	f.Add([]byte{0x3f, 0xe1, 0x1f, 0x82}, uint16(1)) // a dynamic table size update
	f.Fuzz(func(t *testing.T, blk []byte, split uint16) {
		if len(blk) > 1<<16 {
			return
		}
		cut := int(split) % (len(blk) + 1)
		in := frames(func(fr *http2.Framer, _ func(...string) []byte) {
			fr.WriteSettings()
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: blk[:cut], EndStream: true})
			fr.WriteContinuation(1, true, blk[cut:])
		})
		s := fuzzServer()
		c := &fuzzConn{r: bytes.NewReader(append([]byte(http2.ClientPreface), in...))}
		done := make(chan struct{})
		go func() {
			s.ServeConn(c)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the connection outlived its input")
		}
	})
}
