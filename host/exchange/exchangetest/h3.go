package exchangetest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/qpack"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/quicvarint"
	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/tlsconf/tlstest"
)

// h3Cert is the certificate every "h3" engine serves, made once per test
// binary (tests start many engines) and trusted by their clients only.
var h3Cert = sync.OnceValues(func() (tls.Certificate, *x509.CertPool) {
	ca := tlstest.NewCA(panicT{}, tlstest.ECDSA)
	return ca.Server(panicT{}, "127.0.0.1").TLS(panicT{}), ca.Pool()
})

// panicT fails by panicking: h3Cert runs outside any one test.
type panicT struct{}

func (panicT) Helper()           {}
func (panicT) Fatal(args ...any) { panic(args) }

// startH3 serves h over HTTP/3 on a UDP loopback socket, as host/listen/h3.go
// does: exchange.Std behind quic-go's http3.Server, TLS 1.3, ALPN h3.
func startH3(t testing.TB, h exchange.Handler) Engine {
	t.Helper()
	cert, pool := h3Cert()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	qt := &quic.Transport{Conn: pc}
	ln, err := qt.Listen(&tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{http3.NextProtoH3},
		MinVersion:   tls.VersionTLS13,
	}, &quic.Config{HandshakeIdleTimeout: 10 * time.Second, MaxIncomingStreams: 250})
	if err != nil {
		_ = qt.Close()
		_ = pc.Close()
		t.Fatal(err)
	}
	srv := &http3.Server{Handler: exchange.Std(h, RenderError)}
	go srv.ServeListener(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = srv.Close()
		_ = ln.Close()
		_ = qt.Close()
		_ = pc.Close()
	})
	tr := &http3.Transport{
		TLSClientConfig:    &tls.Config{RootCAs: pool},
		DisableCompression: true,
	}
	t.Cleanup(func() { _ = tr.Close() })
	return Engine{Name: "h3", URL: "https://" + pc.LocalAddr().String(), Proto: "HTTP/3.0",
		Client: &http.Client{Transport: tr, CheckRedirect: noRedirect, Timeout: 10 * time.Second}}
}

// rawH3 sends one GET over HTTP/3 on a fresh QUIC connection: the
// fields QPACK-encoded as given (names in lower case, "Host" as
// :authority, the engine's address when no Host is given, since HTTP/3
// requires an authority).
func rawH3(t testing.TB, e Engine, path string, fields [][2]string) (int, []byte) {
	t.Helper()
	_, pool := h3Cert()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := quic.DialAddr(ctx, e.Addr(), &tls.Config{
		RootCAs:    pool,
		ServerName: "127.0.0.1",
		NextProtos: []string{http3.NextProtoH3},
	}, &quic.Config{HandshakeIdleTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseWithError(0x100, "") // H3_NO_ERROR
	// The control stream: its type and an empty SETTINGS frame. It
	// stays open until the connection closes (RFC 9114, 6.2.1).
	ctl, err := conn.OpenUniStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.Write([]byte{0x00, 0x04, 0x00}); err != nil {
		t.Fatal(err)
	}
	var hb bytes.Buffer
	enc := qpack.NewEncoder(&hb)
	enc.WriteField(qpack.HeaderField{Name: ":method", Value: "GET"})
	enc.WriteField(qpack.HeaderField{Name: ":scheme", Value: "https"})
	authority := e.Addr()
	for _, f := range fields {
		if strings.EqualFold(f[0], "host") {
			authority = f[1]
		}
	}
	enc.WriteField(qpack.HeaderField{Name: ":authority", Value: authority})
	enc.WriteField(qpack.HeaderField{Name: ":path", Value: path})
	for _, f := range fields {
		if !strings.EqualFold(f[0], "host") {
			enc.WriteField(qpack.HeaderField{Name: strings.ToLower(f[0]), Value: f[1]})
		}
	}
	str, err := conn.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	str.SetDeadline(time.Now().Add(10 * time.Second))
	frame := quicvarint.Append(quicvarint.Append(nil, 0x01), uint64(hb.Len())) // HEADERS
	if _, err := str.Write(append(frame, hb.Bytes()...)); err != nil {
		t.Fatal(err)
	}
	str.Close() // the request has no body
	r := bufio.NewReader(str)
	status, body := 0, []byte(nil)
	for {
		typ, err := quicvarint.Read(r)
		if err == io.EOF {
			return status, body
		}
		if err != nil {
			t.Fatalf("read frame: %v", err)
		}
		n, err := quicvarint.Read(r)
		if err != nil {
			t.Fatalf("read frame: %v", err)
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(r, payload); err != nil {
			t.Fatalf("read frame: %v", err)
		}
		switch typ {
		case 0x00: // DATA
			body = append(body, payload...)
		case 0x01: // HEADERS: the response's, an interim one's, or trailers
			dec := qpack.NewDecoder().Decode(payload)
			for {
				hf, err := dec()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("qpack: %v", err)
				}
				if hf.Name == ":status" && (status == 0 || status < 200) {
					status, _ = strconv.Atoi(hf.Value)
				}
			}
		}
	}
}
