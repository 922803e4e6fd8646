package h2_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/h2"
	"github.com/sluicehq/sluice/host/proxy"
	"github.com/sluicehq/sluice/host/static"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// largeBody is 5 MB of bytes that differ from one offset to the next.
var largeBody = func() []byte {
	b := make([]byte, 5<<20)
	for i := range b {
		b[i] = byte(i*7 + i>>12)
	}
	return b
}()

// testCert is a certificate for 127.0.0.1 and the pool that trusts it.
func testCert(t *testing.T) (tls.Certificate, *x509.CertPool) {
	ts := httptest.NewUnstartedServer(nil)
	ts.StartTLS()
	defer ts.Close()
	return ts.TLS.Certificates[0], ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
}

// TestLargeResponses: a 5 MB body, static (sendfile's path) or proxied
// (a produced stream), reaches clients with a small window replenished as
// data arrives and with a 1 GiB window given once, over h2c and TLS,
// through a frame-level client, Go's http2.Transport and curl (where it
// speaks HTTP/2). The pump used to stop when the last ready stream filled
// the write buffer, and the rest waited for the client's next frame:
// 131,072 bytes and then nothing (issue 21, finding 2).
func TestLargeResponses(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), largeBody, 0o644); err != nil {
		t.Fatal(err)
	}
	sh, err := static.New(static.Options{Root: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Close() })
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(largeBody)))
		w.Write(largeBody)
	}))
	t.Cleanup(up.Close)
	ph, err := proxy.New(proxy.Options{Upstreams: []proxy.Upstream{{URL: up.URL}}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ph.Start()
	t.Cleanup(func() { ph.Close() })

	cert, pool := testCert(t)
	want := sha256.Sum256(largeBody)
	curl := curlH2()
	for _, hc := range []struct {
		name string
		h    exchange.Handler
	}{{"static", sh}, {"proxied", ph}} {
		for _, secure := range []bool{false, true} {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			scheme := "http"
			if secure {
				scheme = "https"
				ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}})
			}
			srv := h2.New(h2.Options{Handler: hc.h, TLS: secure})
			go srv.Serve(ln)
			t.Cleanup(func() {
				ln.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				_ = srv.Shutdown(ctx)
			})
			addr := ln.Addr().String()
			dialer := func() (net.Conn, error) {
				d := &net.Dialer{Timeout: 5 * time.Second}
				if secure {
					return tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: pool, NextProtos: []string{"h2"}})
				}
				return d.Dial("tcp", addr)
			}
			for _, window := range []uint32{65535, 16 << 10, 1 << 30} {
				t.Run(fmt.Sprintf("%s/%s/frames-window-%d", hc.name, scheme, window), func(t *testing.T) {
					c, err := dialer()
					if err != nil {
						t.Fatal(err)
					}
					defer c.Close()
					got, err := fetchFrames(c, "/big.bin", window)
					if err != nil {
						t.Fatalf("after %d bytes: %v", len(got), err)
					}
					if sha256.Sum256(got) != want {
						t.Fatalf("body: %d bytes, not the file's %d", len(got), len(largeBody))
					}
				})
			}
			t.Run(hc.name+"/"+scheme+"/http2.Transport", func(t *testing.T) {
				tr := &http2.Transport{AllowHTTP: true, DialTLSContext: func(context.Context, string, string, *tls.Config) (net.Conn, error) {
					return dialer()
				}}
				defer tr.CloseIdleConnections()
				cl := &http.Client{Transport: tr, Timeout: 10 * time.Second}
				resp, err := cl.Get(scheme + "://" + addr + "/big.bin")
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || sha256.Sum256(got) != want {
					t.Fatalf("body: %d bytes (%v), want the file's %d", len(got), err, len(largeBody))
				}
			})
			t.Run(hc.name+"/"+scheme+"/curl", func(t *testing.T) {
				if curl == "" {
					t.Skip("no curl with HTTP/2")
				}
				args := []string{"-sS", "--max-time", "10", "-o", "-"}
				if secure {
					args = append(args, "--http2", "-k")
				} else {
					args = append(args, "--http2-prior-knowledge")
				}
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				defer cancel()
				got, err := exec.CommandContext(ctx, curl, append(args, scheme+"://"+addr+"/big.bin")...).Output()
				if err != nil || sha256.Sum256(got) != want {
					t.Fatalf("curl: %d bytes (%v), want the file's %d", len(got), err, len(largeBody))
				}
			})
		}
	}
}

// curlH2 is the path of a curl that speaks HTTP/2, or "".
func curlH2() string {
	p, err := exec.LookPath("curl")
	if err != nil {
		return ""
	}
	out, err := exec.Command(p, "--version").Output()
	if err != nil || !strings.Contains(string(out), "HTTP2") {
		return ""
	}
	return p
}

// fetchFrames GETs path on c with a stream and connection window of
// window bytes: below 1 GiB the client returns credit as data arrives (as
// browsers do); at 1 GiB it gives that once and never again. It stops at
// END_STREAM, an error, or 5 s.
func fetchFrames(c net.Conn, path string, window uint32) ([]byte, error) {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	io.WriteString(c, http2.ClientPreface)
	fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: window})
	if window > 65535 {
		fr.WriteWindowUpdate(0, window-65535)
	}
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "a.test"}, {":path", path}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b.Bytes(), EndHeaders: true, EndStream: true}); err != nil {
		return nil, err
	}
	var got []byte
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return got, err
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.MetaHeadersFrame:
			if s := f.PseudoValue("status"); s != "200" {
				return got, fmt.Errorf("status %s", s)
			}
		case *http2.DataFrame:
			got = append(got, f.Data()...)
			if f.StreamEnded() {
				return got, nil
			}
			if n := uint32(len(f.Data())); n > 0 && window < 1<<30 {
				fr.WriteWindowUpdate(0, n)
				fr.WriteWindowUpdate(1, n)
			}
		case *http2.RSTStreamFrame:
			return got, fmt.Errorf("RST_STREAM %v", f.ErrCode)
		case *http2.GoAwayFrame:
			return got, fmt.Errorf("GOAWAY %v", f.ErrCode)
		}
	}
}
