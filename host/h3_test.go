package host

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/generation"
	"github.com/sluicehq/sluice/host/tlsconf/tlstest"
)

func init() {
	// Loopback tests do not need quic-go's larger UDP buffers.
	os.Setenv("QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING", "true")
}

// h3Env starts a TLS listener on 127.0.0.1 with http3 = true, loaded from
// HCL (so the attribute is decoded too): a respond route, a static route,
// and a proxy route that tlsTestDeps turns into tlsEcho.
func h3Env(t *testing.T) (e *tlsEnv, srv *Server, addr string) {
	t.Helper()
	e = newTLSEnv(t, tlstest.Kinds[0])
	cert, key := e.ca.Server(t, "a.test").Write(t, e.dir, "a-")
	root := filepath.Join(e.dir, "public")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("static over h3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr = tlsFreeAddr(t)
	src := fmt.Sprintf(`
listener %[1]q {
  http3 = true
}

site "a.test" {
  listen = [%[1]q]
  hsts   = "max-age=60"

  tls {
    cert = %[2]q
    key  = %[3]q
  }

  route "/respond" {
    respond {
      status = 201
      body   = "responded"
    }
  }

  route "/static" {
    static {
      root = %[4]q
    }
  }

  route "/echo" {
    proxy {
      upstreams = ["http://127.0.0.1:1"]
    }
  }
}
`, addr, cert, key, root)
	cfg, diags := config.Parse(filepath.Join(e.dir, "sluice.hcl"), []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if l := cfg.Listener(addr); l == nil || !l.HTTP3 || !l.TLS {
		t.Fatalf("listener %q: %+v", addr, l)
	}
	return e, tlsStart(t, cfg), addr
}

// h3Client speaks HTTP/3 only, trusting the test CA, and dials
// 127.0.0.1 at the URL's port whatever its host name.
func h3Client(t *testing.T, e *tlsEnv, cert ...tls.Certificate) *http.Client {
	tr := &http3.Transport{
		TLSClientConfig: &tls.Config{RootCAs: e.ca.Pool(), Certificates: cert},
		QUICConfig:      &quic.Config{HandshakeIdleTimeout: 3 * time.Second, MaxIdleTimeout: 5 * time.Second},
		Dial: func(ctx context.Context, addr string, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
			return quic.DialAddr(ctx, "127.0.0.1:"+tlsPortOf(addr), tc, qc)
		},
	}
	t.Cleanup(func() { _ = tr.Close() })
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}
}

func TestHTTP3(t *testing.T) {
	e, _, addr := h3Env(t)
	port := tlsPortOf(addr)
	c := h3Client(t, e)
	base := "https://a.test:" + port
	wantAltSvc := `h3=":` + port + `"; ma=86400`

	for _, tc := range []struct {
		path   string
		status int
		body   string
	}{
		{"/respond", 201, "responded"},
		{"/static/hello.txt", 200, "static over h3\n"},
		{"/echo", 200, "proto=HTTP/3.0 tls=true host=a.test"},
		{"/nothing", 404, "not found\n"},
	} {
		resp, body := tlsGet(t, c, base+tc.path)
		if resp.ProtoMajor != 3 || resp.StatusCode != tc.status || !strings.HasPrefix(body, tc.body) {
			t.Errorf("h3 GET %s: %s %d %q, want HTTP/3.0 %d %q", tc.path, resp.Proto, resp.StatusCode, body, tc.status, tc.body)
		}
		// The TLS policy of stdHandler applies to HTTP/3 too.
		if got := resp.Header.Get("Strict-Transport-Security"); got != "max-age=60" {
			t.Errorf("h3 GET %s: HSTS %q", tc.path, got)
		}
		if got := resp.Header.Get("Alt-Svc"); got != wantAltSvc {
			t.Errorf("h3 GET %s: Alt-Svc %q, want %q", tc.path, got, wantAltSvc)
		}
	}

	// HTTP/1.1 (fasthttp) and HTTP/2 (net/http) on the same port announce it.
	for _, proto := range []string{"h1", "h2"} {
		for _, path := range []string{"/respond", "/static/hello.txt", "/nothing"} {
			resp, _ := tlsGet(t, e.client(t, proto, nil), base+path)
			if got := resp.Header.Get("Alt-Svc"); got != wantAltSvc {
				t.Errorf("%s GET %s (%s): Alt-Svc %q, want %q", proto, path, resp.Proto, got, wantAltSvc)
			}
		}
	}
}

// TestHTTP3Shutdown: Shutdown ends the HTTP/3 side with the listener and
// frees the UDP port.
func TestHTTP3Shutdown(t *testing.T) {
	e, srv, addr := h3Env(t)
	c := h3Client(t, e)
	if resp, _ := tlsGet(t, c, "https://a.test:"+tlsPortOf(addr)+"/respond"); resp.StatusCode != 201 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("shutdown took %v with an idle HTTP/3 connection", d)
	}
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatalf("UDP port still bound after shutdown: %v", err)
	}
	pc.Close()
}

// TestHTTP3NoAltSvcWithout: a TLS listener without http3 announces
// nothing and does not bind UDP.
func TestHTTP3NoAltSvcWithout(t *testing.T) {
	e := newTLSEnv(t, tlstest.Kinds[0])
	addr := tlsFreeAddr(t)
	a := e.site(t, "a.test", addr)
	tlsStart(t, &config.Config{Sites: []*config.Site{a}, Listeners: []*config.Listener{tlsListenerFor(addr, true, a)}})
	resp, _ := tlsGet(t, e.client(t, "h1", nil), "https://a.test:"+tlsPortOf(addr)+"/")
	if got := resp.Header.Get("Alt-Svc"); got != "" {
		t.Errorf("Alt-Svc %q without http3", got)
	}
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatalf("UDP port bound without http3: %v", err)
	}
	pc.Close()
}

// TestHTTP3ClientCertificates: client certificates, the identity header
// and 421 for another site's Host work over QUIC as over TCP.
func TestHTTP3ClientCertificates(t *testing.T) {
	e := newTLSEnv(t, tlstest.Kinds[0])
	clients := tlstest.NewCA(t, tlstest.Kinds[0])
	caFile := filepath.Join(e.dir, "clients.pem")
	if err := os.WriteFile(caFile, clients.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := tlsFreeAddr(t)
	open := e.site(t, "open.test", addr)
	req := e.site(t, "req.test", addr)
	req.TLS.ClientAuth, req.TLS.ClientCA, req.TLS.ClientCertHeader = "require", caFile, testIDHeader
	l := tlsListenerFor(addr, true, open, req)
	l.HTTP3 = true
	tlsStart(t, &config.Config{Sites: []*config.Site{open, req}, Listeners: []*config.Listener{l}})
	port := tlsPortOf(addr)
	anon, withCert := h3Client(t, e), h3Client(t, e, clients.Client(t, "alice").TLS(t))

	if resp, err := anon.Get("https://req.test:" + port + "/"); err == nil {
		resp.Body.Close()
		t.Errorf("require: HTTP/3 request without a client certificate passed")
	}
	resp, body := tlsGet(t, withCert, "https://req.test:"+port+"/", testIDHeader, "CN=root")
	if resp.ProtoMajor != 3 || !strings.Contains(body, "proto=HTTP/3.0 tls=true host=req.test:"+port+" id=CN=alice,O=sluice tests") {
		t.Errorf("require: %s %q, want alice's identity over HTTP/3", resp.Proto, body)
	}
	_, body = tlsGet(t, anon, "https://open.test:"+port+"/", testIDHeader, "CN=root")
	if !strings.HasSuffix(body, "id=") {
		t.Errorf("open site: %q, want the spoofed identity removed", body)
	}
	resp, _ = tlsGet(t, anon, "https://open.test:"+port+"/", "Host", "req.test")
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("Host req.test on an open.test connection: %d, want 421", resp.StatusCode)
	}
}

// TestHTTP3PortTaken: when the UDP port cannot be bound, Apply fails and
// leaves the TCP port free.
func TestHTTP3PortTaken(t *testing.T) {
	e := newTLSEnv(t, tlstest.Kinds[0])
	addr := tlsFreeAddr(t)
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Skip("UDP port not free:", err)
	}
	defer pc.Close()
	a := e.site(t, "a.test", addr)
	l := tlsListenerFor(addr, true, a)
	l.HTTP3 = true
	g, err := generation.Build(&config.Config{Sites: []*config.Site{a}, Listeners: []*config.Listener{l}}, tlsTestDeps())
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(tlsTestDeps().Log)
	defer g.Close(srv.log)
	if err := srv.Apply(g); err == nil || !strings.Contains(err.Error(), "http3") {
		t.Fatalf("Apply with the UDP port taken: %v, want an http3 error", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("TCP port still bound after the failed Apply: %v", err)
	}
	ln.Close()
}

func TestHTTP3ConfigNeedsTLS(t *testing.T) {
	src := `
listener "127.0.0.1:8080" {
  http3 = true
}

site "*" {
  listen = ["127.0.0.1:8080"]
  route "/" {
    respond {}
  }
}
`
	_, diags := config.Parse("h3.hcl", []byte(src))
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "http3 on a plain address") {
		t.Fatalf("want an http3 error, got %v", diags)
	}
}
