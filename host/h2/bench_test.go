package h2_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/frontdoor"
	"github.com/sluicehq/sluice/host/h2"
	"github.com/sluicehq/sluice/host/route"
	"github.com/sluicehq/sluice/host/static"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// cachedStatic answers as the static handler does for a cached file:
// header values and body from the cache, none copied.
var (
	cachedBody  = bytes.Repeat([]byte("x"), 1024)
	cachedType  = []byte("text/html; charset=utf-8")
	cachedETag  = []byte(`"5f3e-400"`)
	cachedMTime = []byte("Mon, 30 Nov 2026 10:00:00 GMT")
)

var cachedStatic = exchange.HandlerFunc(func(x exchange.Exchange) error {
	x.SetResponseHeaderBytes("Content-Type", cachedType)
	x.SetResponseHeaderBytes("ETag", cachedETag)
	x.SetResponseHeaderBytes("Last-Modified", cachedMTime)
	x.SetBody(cachedBody)
	return nil
})

// BenchmarkCachedStatic serves a cached 1 KiB file over one connection,
// 16 streams at a time, as h2load -m 16 would: the client side writes
// pre-encoded frames and reads without allocating, so the allocations
// reported are the server's (none expected per request).
func BenchmarkCachedStatic(b *testing.B) { benchServe(b, cachedStatic) }

// BenchmarkDoorStatic is BenchmarkCachedStatic through the front door and
// the static handler, as the host serves a cached file.
func BenchmarkDoorStatic(b *testing.B) {
	doorStatic(b)
}

// doorStaticDir holds the benchmark's file, made once per test binary
// (TestMain removes it): the static cache trusts a file's bytes only
// once its ctime is 2 s old.
var doorStaticDir = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "h2bench")
	if err != nil {
		return "", err
	}
	doorStaticMade = dir
	if err := os.WriteFile(filepath.Join(dir, "index.html"), bytes.Repeat([]byte("<p>hello, world</p>\n"), 170), 0o644); err != nil {
		return "", err
	}
	time.Sleep(2100 * time.Millisecond)
	return dir, nil
})

func doorStatic(b *testing.B) {
	dir, err := doorStaticDir()
	if err != nil {
		b.Fatal(err)
	}
	benchServe(b, doorHandler(b, dir))
}

var doorStaticMade string

func TestMain(m *testing.M) {
	code := m.Run()
	if doorStaticMade != "" {
		os.RemoveAll(doorStaticMade)
	}
	os.Exit(code)
}

func doorHandler(b testing.TB, dir string) exchange.Handler {
	sh, err := static.New(static.Options{Root: dir})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sh.Close() })
	site := &route.Site{Name: "bench.test", Hosts: []string{"bench.test"}}
	table, err := route.NewTable([]*route.Site{site})
	if err != nil {
		b.Fatal(err)
	}
	door := &frontdoor.Door{Sites: table, Strip: []string{"X-Client-Subject"}, MaxRequestBody: 16 << 20}
	return exchange.HandlerFunc(func(x exchange.Exchange) error {
		return door.Serve(x, "", func(*route.Site) error { return sh.ServeExchange(x) })
	})
}

func benchServe(b *testing.B, h exchange.Handler) {
	round := benchClient(b, h)
	round() // the connection's first requests fill the HPACK table
	b.ReportAllocs()
	b.ResetTimer()
	done := 0
	for ; done < b.N; done += batch {
		round()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(done), "ns/req")
}

// batch is how many streams the benchmark client has open at once.
const batch = 16

// benchClient connects to a server for h and returns a function that
// sends batch requests and reads their responses.
func benchClient(b testing.TB, h exchange.Handler) (round func()) {
	_, addr := start(b, h2.Options{Handler: h})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Minute))
	var setup bytes.Buffer
	setup.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&setup, nil)
	fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 30})
	fr.WriteWindowUpdate(0, 1<<30)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	fields := []hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "https"},
		{Name: ":authority", Value: "bench.test"}, {Name: ":path", Value: "/index.html"},
		{Name: "user-agent", Value: "h2load nghttp2/1.59.0"}, {Name: "accept-encoding", Value: "gzip, br"}}
	for _, f := range fields {
		enc.WriteField(f)
	}
	first := bytes.Clone(hb.Bytes())
	hb.Reset()
	for _, f := range fields {
		enc.WriteField(f) // now all indexed
	}
	next := bytes.Clone(hb.Bytes())
	if _, err := c.Write(setup.Bytes()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	br := bufio.NewReaderSize(c, 64<<10)
	out := make([]byte, 0, batch*(9+len(first)))
	var payload [16 << 10]byte
	var hdr [9]byte
	id := uint32(1)
	return func() {
		out = out[:0]
		for range batch {
			blk := next
			if id == 1 {
				blk = first
			}
			out = append(out, byte(len(blk)>>16), byte(len(blk)>>8), byte(len(blk)), byte(http2.FrameHeaders),
				byte(http2.FlagHeadersEndHeaders|http2.FlagHeadersEndStream), byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
			out = append(out, blk...)
			id += 2
		}
		if _, err := c.Write(out); err != nil {
			b.Fatal(err)
		}
		for ended := 0; ended < batch; {
			h := hdr[:]
			if _, err := io.ReadFull(br, h); err != nil {
				b.Fatal(err)
			}
			n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
			if _, err := io.ReadFull(br, payload[:n]); err != nil {
				b.Fatal(err)
			}
			switch http2.FrameType(h[3]) {
			case http2.FrameData:
				if http2.Flags(h[4]).Has(http2.FlagDataEndStream) {
					ended++
				}
			case http2.FrameHeaders:
				if http2.Flags(h[4]).Has(http2.FlagHeadersEndStream) {
					b.Fatal("response without a body")
				}
				// The status is the first field: ":status: 200" is
				// static table entry 8 (0x88).
				if n == 0 || payload[0] != 0x88 && !(payload[0] == 0x20 && n > 1 && payload[1] == 0x88) {
					b.Fatalf("status not 200: % x", payload[:min(n, 8)])
				}
			case http2.FrameRSTStream, http2.FrameGoAway:
				b.Fatalf("%v %x", http2.FrameType(h[3]), binary.BigEndian.Uint32(payload[n-4:n]))
			}
		}
	}
}

// TestCachedStaticAllocs: serving a cached file allocates nothing per
// request once the connection is warm (the benchmark above, checked).
func TestCachedStaticAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	dir, err := doorStaticDir()
	if err != nil {
		t.Fatal(err)
	}
	for name, h := range map[string]exchange.Handler{"handler": cachedStatic, "door+static": doorHandler(t, dir)} {
		round := benchClient(t, h)
		round() // the connection's first requests fill the HPACK table
		if a := testing.AllocsPerRun(50, round) / batch; a > 0.05 {
			t.Errorf("%s: %.2f allocations per request, want 0", name, a)
		}
	}
}
