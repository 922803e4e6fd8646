//go:build conformance

package tls_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/conformance/internal/pebble"
	"github.com/sluicehq/sluice/host"
	"github.com/sluicehq/sluice/host/generation"
	"github.com/sluicehq/sluice/host/respond"
	"github.com/sluicehq/sluice/host/tlsconf/tlstest"
)

// pebbleCA signs Pebble's own HTTPS certificate. The ACME client trusts
// it the way an operator of a private CA would make sluice trust one:
// through SSL_CERT_FILE, which must be set before anything in the
// process loads the system roots.
var pebbleCA *tlstest.CA

type mainT struct{}

func (mainT) Helper()           {}
func (mainT) Fatal(args ...any) { panic(fmt.Sprint(args...)) }

var caDir string

func TestMain(m *testing.M) {
	var err error
	if caDir, err = os.MkdirTemp("", "sluice-pebble-ca"); err != nil {
		panic(err)
	}
	pebbleCA = tlstest.NewCA(mainT{}, tlstest.ECDSA)
	if err := os.WriteFile(filepath.Join(caDir, "ca.pem"), pebbleCA.PEM, 0o600); err != nil {
		panic(err)
	}
	os.Setenv("SSL_CERT_FILE", filepath.Join(caDir, "ca.pem"))
	code := m.Run()
	os.RemoveAll(caDir)
	os.Exit(code)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func port(addr string) string { _, p, _ := net.SplitHostPort(addr); return p }

func portNum(addr string) int { n, _ := strconv.Atoi(port(addr)); return n }

// sluice starts a server with two ACME sites: one allowing both
// challenges (so TLS-ALPN-01 is used), one allowing only HTTP-01; the
// plain listener redirects to https.
func startSluice(t *testing.T, p *pebble.Pebble, tlsAddr, plainAddr, storage, email string) *host.Server {
	route := []*config.Route{{Path: "/", Kind: "respond", Blocks: map[string]config.Block{"respond": &respond.Options{Status: 200, Body: "hello over acme\n"}}}}
	site := func(name string, chals ...string) *config.Site {
		return &config.Site{Name: name, Listen: []string{tlsAddr}, HTTPSRedirect: []string{plainAddr}, Routes: route,
			TLS: &config.TLS{MinVersion: "1.2", ACME: &config.ACME{Email: email, Directory: p.Dir, Challenges: chals, Storage: storage}}}
	}
	alpn, h01 := site("alpn.sluice.test", "tls-alpn-01", "http-01"), site("http.sluice.test", "http-01")
	lis := func(addr string, tls bool) *config.Listener {
		l := &config.Listener{Address: addr, TLS: tls, ReadTimeout: 30 * time.Second, ReadHeaderTimeout: 10 * time.Second,
			WriteTimeout: 30 * time.Second, IdleTimeout: 30 * time.Second, MaxHeaderBytes: 16 << 10, MaxConns: 1024}
		if tls {
			l.Sites, l.DefaultSite = []string{alpn.Name, h01.Name}, alpn.Name
		} else {
			l.Redirects = []string{alpn.Name, h01.Name}
		}
		return l
	}
	cfg := &config.Config{Sites: []*config.Site{alpn, h01}, Listeners: []*config.Listener{lis(tlsAddr, true), lis(plainAddr, false)}}
	cfg.Server.ShutdownTimeout = 2 * time.Second
	log := slog.New(slog.NewTextHandler(newTestWriter(t), &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv := host.NewServer(log)
	g, err := generation.Build(cfg, generation.Deps{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Apply(g); err != nil {
		t.Fatal(err)
	}
	return srv
}

// testWriter sends the server's log to the test's, and drops what
// background work (ACME retries) logs after the test has ended.
type testWriter struct {
	t    *testing.T
	done *atomic.Bool
}

func newTestWriter(t *testing.T) testWriter {
	w := testWriter{t: t, done: new(atomic.Bool)}
	t.Cleanup(func() { w.done.Store(true) })
	return w
}

func (w testWriter) Write(p []byte) (int, error) {
	if !w.done.Load() {
		w.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

func stop(srv *host.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
}

// served handshakes with name, verifying the certificate against
// Pebble's root, until it succeeds or the time is up.
func served(t *testing.T, addr, name string, root *x509.CertPool, within time.Duration) *x509.Certificate {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		d := &net.Dialer{Timeout: 5 * time.Second}
		c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{ServerName: name, RootCAs: root})
		if err == nil {
			leaf := c.ConnectionState().PeerCertificates[0]
			c.Close()
			return leaf
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no certificate from Pebble's CA within %v: %v", name, within, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func TestACME_Pebble(t *testing.T) {
	tlsAddr, plainAddr := freeAddr(t), freeAddr(t)
	p := pebble.Start(t, pebble.Options{CA: pebbleCA, HTTPPort: portNum(plainAddr), TLSPort: portNum(tlsAddr), Validity: 30})
	storage := t.TempDir()
	srv := startSluice(t, p, tlsAddr, plainAddr, storage, "ops@sluice.test")
	defer func() { stop(srv) }()

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		ForceAttemptHTTP2: true,
		TLSClientConfig:   &tls.Config{RootCAs: p.Root},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, "127.0.0.1:"+port(addr))
		},
	}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	first := map[string]*x509.Certificate{}
	for _, name := range []string{"alpn.sluice.test", "http.sluice.test"} {
		leaf := served(t, tlsAddr, name, p.Root, 90*time.Second)
		first[name] = leaf
		t.Logf("%s: issued serial %s by %q, valid until %s", name, leaf.SerialNumber, leaf.Issuer.CommonName, leaf.NotAfter.Format(time.TimeOnly))
		for _, proto := range []string{"https", "http"} {
			addr := tlsAddr
			if proto == "http" {
				addr = plainAddr
			}
			resp, err := client.Get(proto + "://" + name + ":" + port(addr) + "/")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch proto {
			case "https":
				if resp.StatusCode != 200 || string(body) != "hello over acme\n" || resp.Proto != "HTTP/2.0" {
					t.Errorf("%s over https: %s %d %q", name, resp.Proto, resp.StatusCode, body)
				}
			case "http":
				if want := "https://" + name + ":" + port(tlsAddr) + "/"; resp.StatusCode != 308 || resp.Header.Get("Location") != want {
					t.Errorf("%s over http: %d %q, want 308 to %s", name, resp.StatusCode, resp.Header.Get("Location"), want)
				}
			}
		}
		if _, err := os.Stat(filepath.Join(storage, name)); err != nil {
			t.Errorf("%s: certificate not in storage: %v", name, err)
		}
	}

	// A restart reads the certificates from storage instead of asking
	// for new ones. (A changed account email makes the server build a new
	// ACME manager, as a new process would; certificates are stored by
	// name, not by account.)
	stop(srv)
	srv = startSluice(t, p, tlsAddr, plainAddr, storage, "ops2@sluice.test")
	for name, leaf := range first {
		got := served(t, tlsAddr, name, p.Root, 10*time.Second)
		if got.SerialNumber.Cmp(leaf.SerialNumber) != 0 && time.Until(leaf.NotAfter) > 12*time.Second {
			t.Errorf("%s after restart: serial %s, want the stored %s", name, got.SerialNumber, leaf.SerialNumber)
		}
	}

	// Renewal: the certificates live 30 s and are renewed with a third
	// of that left; the new one is served without a restart.
	for name, leaf := range first {
		deadline := time.Now().Add(60 * time.Second)
		for {
			got := served(t, tlsAddr, name, p.Root, 10*time.Second)
			if got.SerialNumber.Cmp(leaf.SerialNumber) != 0 {
				if !got.NotAfter.After(leaf.NotAfter) {
					t.Errorf("%s: renewed certificate expires %s, not after the old %s", name, got.NotAfter, leaf.NotAfter)
				}
				t.Logf("%s: renewed, serial %s valid until %s", name, got.SerialNumber, got.NotAfter.Format(time.TimeOnly))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not renewed within 60 s (expires %s)", name, leaf.NotAfter.Format(time.TimeOnly))
			}
			time.Sleep(time.Second)
		}
	}
}
