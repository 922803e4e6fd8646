package h2_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/h2"
	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// seen is what a handler saw of a request, or refused when none ran.
type seen struct {
	refused   bool
	method    string
	target    string
	authority string
	fields    []string // "name: value", names in lower case, sorted
}

func (s seen) String() string {
	if s.refused {
		return "refused"
	}
	return fmt.Sprintf("%q %q authority %q fields %q", s.method, s.target, s.authority, s.fields)
}

// sortFields drops what x/net/http2 takes out of the header (Host,
// Expect and Trailer, which it acts on) and sorts the rest.
func sortFields(f []string) []string {
	out := f[:0]
	for _, kv := range f {
		name, _, _ := strings.Cut(kv, ":")
		switch name {
		case "host", "expect", "trailer":
			continue
		}
		out = append(out, kv)
	}
	slices.Sort(out)
	return out
}

// diffCase is one request as the differential fuzz target sends it.
type diffCase struct {
	fields []hpack.HeaderField
	split  int  // where CONTINUATION takes the block over; 0: none
	body   bool // a DATA frame ends the stream, not the HEADERS
}

// decodeCase reads a case from fuzz input: fields separated by 0x1e, a
// name and its value by the first 0x1f; the first byte picks the split
// (its low 7 bits) and whether a body follows (its high bit).
func decodeCase(in []byte) diffCase {
	var c diffCase
	if len(in) == 0 {
		return c
	}
	c.split, c.body = int(in[0]&0x7f), in[0]&0x80 != 0
	for _, f := range bytes.Split(in[1:], []byte{0x1e}) {
		name, value, _ := bytes.Cut(f, []byte{0x1f})
		c.fields = append(c.fields, hpack.HeaderField{Name: string(name), Value: string(value)})
	}
	return c
}

func encodeCase(split byte, kv ...string) []byte {
	b := []byte{split}
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b = append(b, 0x1e)
		}
		b = append(b, kv[i]...)
		b = append(b, 0x1f)
		b = append(b, kv[i+1]...)
	}
	return b
}

// roundTrip sends c as stream 1 on a fresh in-memory connection served by
// serve, and reports what the handler saw (got receives it) or refused:
// RST_STREAM, GOAWAY, or an answer the handler did not give (x/net/http2
// answers 400 to a connection-specific field). Every wait has a deadline;
// wait says whether to wait for serve to return once the connection is
// closed (x/net/http2 may take its GOAWAY timeout, 1 s, to do so).
func roundTrip(t *testing.T, serve func(net.Conn), got chan seen, c diffCase, wait bool) seen {
	select {
	case <-got: // a handler that ran for a request then refused
	default:
	}
	cc, sc := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		serve(sc)
	}()
	defer func() {
		cc.Close()
		sc.Close()
		if !wait {
			return
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the server outlived its connection")
		}
	}()
	cc.SetDeadline(time.Now().Add(5 * time.Second))
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range c.fields {
		enc.WriteField(f)
	}
	blk := hb.Bytes()
	cut := len(blk)
	if c.split > 0 {
		cut = c.split % (len(blk) + 1)
	}
	frames := readFrames(cc)
	fw := http2.NewFramer(cc, nil)
	fw.AllowIllegalWrites = true
	io.WriteString(cc, http2.ClientPreface)
	fw.WriteSettings()
	fw.WriteSettingsAck()
	fw.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: blk[:cut], EndStream: !c.body, EndHeaders: cut == len(blk)})
	if cut < len(blk) {
		fw.WriteContinuation(1, true, blk[cut:])
	}
	if c.body {
		fw.WriteData(1, true, []byte("abc"))
	}
	for f := range frames {
		switch f := f.(type) {
		case *http2.RSTStreamFrame, *http2.GoAwayFrame:
			return seen{refused: true}
		case *http2.MetaHeadersFrame:
			select {
			case s := <-got:
				return s
			default:
				return seen{refused: true} // answered without the handler
			}
		default:
			_ = f
		}
	}
	t.Fatal("no answer before the deadline")
	return seen{}
}

// readFrames reads c's frames apart, as net.Pipe has no buffer: the
// server's SETTINGS and its answer must not wait on the client's writes.
// The channel closes when c does; SETTINGS, WINDOW_UPDATE and PING are
// left out.
func readFrames(c net.Conn) chan http2.Frame {
	frames := make(chan http2.Frame, 16)
	go func() {
		defer close(frames)
		fr := http2.NewFramer(nil, c)
		fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
		fr.MaxHeaderListSize = 1 << 20
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			switch f.(type) {
			case *http2.SettingsFrame, *http2.WindowUpdateFrame, *http2.PingFrame:
				continue
			}
			select {
			case frames <- f:
			case <-time.After(5 * time.Second):
				return // nobody reads any more
			}
		}
	}()
	return frames
}

// stricter reports why sluice's engine may refuse a request x/net/http2
// takes: the rules it adds on purpose ("" when none applies).
func stricter(c diffCase) string {
	for _, f := range c.fields {
		switch f.Name {
		case ":method":
			if !httpguts.ValidHeaderFieldName(f.Value) {
				return ":method not a token"
			}
		case ":path":
			if strings.ContainsAny(f.Value, " ") {
				return ":path with a space"
			}
			if f.Value == "*" {
				return ":path * for a method other than OPTIONS"
			}
		case "content-length":
			return "content-length checked (a request without a body declares 0)"
		}
	}
	return ""
}

// FuzzDifferentialStd sends the same header block, split across HEADERS
// and CONTINUATION at a fuzzed point, and maybe a body after it, to
// sluice's engine and to x/net/http2's server: where x/net refuses a request sluice must too
// (nothing that Go's server would refuse reaches a handler), where both
// take it their handlers must see the same method, target, authority and
// fields, and sluice refuses what x/net takes only by the rules of
// stricter. Seeded with every request of issue 21.
func FuzzDifferentialStd(f *testing.F) {
	for _, tc := range smuggling {
		f.Add(encodeCase(0, tc.kv...))
	}
	f.Add(encodeCase(0, base()...))
	f.Add(encodeCase(3, append(base(), "cookie", "a=1", "cookie", "b=2", "x-a", "1")...))
	f.Add(encodeCase(0x80, req(":method", "POST", "content-type", "text/plain")...))
	f.Add(encodeCase(0, req(":method", "OPTIONS", ":path", "*")...))
	f.Add(encodeCase(0, req(":path", "/a%20b?q=%zz", "te", "trailers", "host", "a.test")...))
	f.Add(encodeCase(0, ":method", "CONNECT", ":authority", "a.test:443"))
	f.Add(encodeCase(0, append(without(":authority"), "host", "b.test:8080")...))
	f.Add(encodeCase(0, req(":path", "/ü?ü", "x-a", "\tv ü")...))

	ours := make(chan seen, 1)
	std := make(chan seen, 1)
	oursSrv := h2.New(h2.Options{Handler: exchange.HandlerFunc(func(x exchange.Exchange) error {
		s := seen{method: string(x.Method()), target: string(x.RequestURI()), authority: string(x.Host())}
		x.VisitRequestHeaders(func(name, value []byte) {
			s.fields = append(s.fields, strings.ToLower(string(name))+": "+string(value))
		})
		s.fields = sortFields(s.fields)
		select {
		case ours <- s:
		default:
		}
		x.SetBody([]byte("ok"))
		return nil
	}), ReadHeaderTimeout: 5 * time.Second})
	stdSrv := &http2.Server{}
	stdHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := seen{method: r.Method, target: r.RequestURI, authority: r.Host}
		for k, vs := range r.Header {
			for _, v := range vs {
				s.fields = append(s.fields, strings.ToLower(k)+": "+v)
			}
		}
		s.fields = sortFields(s.fields)
		select {
		case std <- s:
		default:
		}
		io.WriteString(w, "ok")
	})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 4<<10 {
			return // under both servers' header list limits
		}
		c := decodeCase(in)
		a := roundTrip(t, oursSrv.ServeConn, ours, c, true)
		b := roundTrip(t, func(nc net.Conn) { stdSrv.ServeConn(nc, &http2.ServeConnOpts{Handler: stdHandler}) }, std, c, false)
		switch {
		case a.refused && b.refused:
		case !a.refused && b.refused:
			t.Fatalf("x/net/http2 refuses, sluice takes it as %v: %q", a, c.fields)
		case a.refused:
			if why := stricter(c); why == "" {
				t.Fatalf("sluice refuses, x/net/http2 takes it as %v: %q", b, c.fields)
			}
		case a.method == http.MethodConnect:
			// x/net gives CONNECT's authority as the target: compare the rest.
			if a.method != b.method || a.authority != b.authority || !slices.Equal(a.fields, b.fields) {
				t.Fatalf("sluice saw %v, x/net/http2 %v: %q", a, b, c.fields)
			}
		case a.method != b.method || a.target != b.target || a.authority != b.authority || !slices.Equal(a.fields, b.fields):
			t.Fatalf("sluice saw %v, x/net/http2 %v: %q", a, b, c.fields)
		}
	})
}
