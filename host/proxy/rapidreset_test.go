package proxy_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/proxy"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// slowH1 is an HTTP/1.1 upstream that answers /fast at once and holds
// /slow open, unanswered, until the proxy closes the connection; held
// counts the connections it holds.
func slowH1(t *testing.T, held *atomic.Int64) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(30 * time.Second))
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					if req.URL.Path != "/slow" {
						io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
						continue
					}
					held.Add(1)
					_, _ = io.Copy(io.Discard, br) // until the proxy closes it
					held.Add(-1)
					return
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// TestH2RapidResetCancelsUpstream: a client that opens streams on a
// proxied route and resets them at once (CVE-2023-44487's pattern) leaves
// nothing behind: each reset ends its upstream request at once, not at
// the proxy's next look at the client (made long here), and the
// upstream's connections, sluice's goroutines and its descriptors are
// back to where they were within a second (issue 21, finding 3). The
// same holds when the client closes the connection instead.
func TestH2RapidResetCancelsUpstream(t *testing.T) {
	if openFDs() < 0 {
		t.Skip("no /proc/self/fd")
	}
	proxy.SetClientCheck(t, time.Minute)
	const streams = 60
	for _, kind := range []string{"http", "h2c"} {
		t.Run(kind, func(t *testing.T) {
			var held atomic.Int64
			var up string
			if kind == "http" {
				up = slowH1(t, &held)
			} else {
				up = h2cBackend(t, func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path != "/slow" {
						io.WriteString(w, "ok")
						return
					}
					held.Add(1)
					defer held.Add(-1)
					select {
					case <-r.Context().Done():
					case <-time.After(30 * time.Second):
					}
				})
			}
			p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: up}}})
			for _, e := range exchangetest.Engines(t, p) {
				if e.Proto != "HTTP/2.0" {
					continue // only HTTP/2 has a stream to reset on a live connection
				}
				for _, how := range []string{"reset", "close"} {
					t.Run(e.Name+"/"+how, func(t *testing.T) {
						if _, body := get(t, e, "/fast"); body != "ok" {
							t.Fatalf("warm-up got %q", body)
						}
						time.Sleep(20 * time.Millisecond)
						g0, fd0 := runtime.NumGoroutine(), openFDs()

						c, err := net.DialTimeout("tcp", e.Addr(), 5*time.Second)
						if err != nil {
							t.Fatal(err)
						}
						defer c.Close()
						c.SetDeadline(time.Now().Add(10 * time.Second))
						fr := http2.NewFramer(c, c)
						io.WriteString(c, http2.ClientPreface)
						fr.WriteSettings()
						fr.WriteSettingsAck()
						go func() { // drain what the server sends
							for {
								if _, err := fr.ReadFrame(); err != nil {
									return
								}
							}
						}()
						var b bytes.Buffer
						enc := hpack.NewEncoder(&b)
						for i := range streams {
							b.Reset()
							for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":path", "/slow"}, {":authority", "a.test"}} {
								enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
							}
							if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: b.Bytes(), EndHeaders: true, EndStream: true}); err != nil {
								t.Fatal(err)
							}
						}
						if !within(t, 5*time.Second, func() bool { return held.Load() == streams }) {
							t.Fatalf("the upstream holds %d requests, want %d", held.Load(), streams)
						}
						if how == "close" {
							c.Close()
						} else {
							for i := range streams {
								fr.WriteRSTStream(uint32(2*i+1), http2.ErrCodeCancel)
							}
						}
						start := time.Now()
						// The attacker's connection stays open: its goroutines
						// and descriptors (a few) are allowed for.
						ok := within(t, time.Second, func() bool {
							return held.Load() == 0 && runtime.NumGoroutine() <= g0+8 && openFDs() <= fd0+4
						})
						if !ok {
							t.Fatalf("%v after the resets: upstream holds %d requests, goroutines %d (baseline %d), descriptors %d (baseline %d)",
								time.Since(start).Round(time.Millisecond), held.Load(), runtime.NumGoroutine(), g0, openFDs(), fd0)
						}
						t.Logf("back to baseline in %v", time.Since(start).Round(time.Millisecond))
					})
				}
			}
		})
	}
}
