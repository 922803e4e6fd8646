package host

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/generation"
	"github.com/sluicehq/sluice/host/proxy"
	"github.com/sluicehq/sluice/host/tlsconf/tlstest"
)

// tlsEcho answers with what the request looked like to the handlers: the
// protocol (and so the engine: HTTP/2.0 is net/http, HTTP/1.x fasthttp),
// TLS, the Host and the client identity header.
var tlsEcho = exchange.HandlerFunc(func(x exchange.Exchange) error {
	x.SetResponseHeader("Content-Type", "text/plain")
	x.SetBody(fmt.Appendf(nil, "proto=%s tls=%v host=%s id=%s", x.Proto(), x.IsTLS(), x.Host(), x.RequestHeader(testIDHeader)))
	return nil
})

const testIDHeader = "X-Client-Subject"

func tlsTestDeps() generation.Deps {
	return generation.Deps{
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Proxy: func(*proxy.Options, string) (exchange.Handler, func() error, error) {
			return tlsEcho, nil, nil
		},
	}
}

// tlsFreeAddr returns a loopback address with a port free right now.
func tlsFreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func tlsPortOf(addr string) string { _, p, _ := net.SplitHostPort(addr); return p }

// tlsEnv is a server with TLS sites and the means to talk to it.
type tlsEnv struct {
	ca    *tlstest.CA
	dir   string
	srv   *Server
	files map[string][2]string
}

func newTLSEnv(t testing.TB, k tlstest.Kind) *tlsEnv {
	return &tlsEnv{ca: tlstest.NewCA(t, k), dir: t.TempDir(), files: map[string][2]string{}}
}

// site returns a TLS site answering with tlsEcho, with a certificate for
// its name and aliases.
func (e *tlsEnv) site(t testing.TB, name string, listen string, aliases ...string) *config.Site {
	c, k := e.ca.Server(t, append([]string{name}, aliases...)...).Write(t, e.dir, strings.ReplaceAll(name, "*", "star")+"-")
	e.files[name] = [2]string{c, k}
	return &config.Site{
		Name: name, Aliases: aliases, Listen: []string{listen},
		TLS:    &config.TLS{Cert: c, Key: k, MinVersion: "1.2"},
		Routes: []*config.Route{{Path: "/", Kind: "proxy", Blocks: map[string]config.Block{"proxy": &proxy.Options{}}}},
	}
}

func tlsListenerFor(addr string, tlsOn bool, sites ...*config.Site) *config.Listener {
	l := &config.Listener{Address: addr, TLS: tlsOn, MaxHeaderBytes: 16 << 10, ReadTimeout: 10 * time.Second,
		ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 10 * time.Second, IdleTimeout: 30 * time.Second, MaxConns: 64}
	for _, s := range sites {
		l.Sites = append(l.Sites, s.Name)
		if l.DefaultSite == "" || s.Default {
			l.DefaultSite = s.Name
		}
	}
	return l
}

func tlsStart(t testing.TB, cfg *config.Config) *Server {
	t.Helper()
	cfg.Server.ShutdownTimeout = 2 * time.Second
	srv := NewServer(tlsTestDeps().Log)
	g, err := generation.Build(cfg, tlsTestDeps())
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Apply(g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return srv
}

// client speaks proto ("h1", "h2" or "h2c") and dials 127.0.0.1 at the
// URL's port whatever its host name, so that names need no DNS.
func (e *tlsEnv) client(t testing.TB, proto string, cert *tls.Certificate) *http.Client {
	var p http.Protocols
	switch proto {
	case "h1":
		p.SetHTTP1(true)
	case "h2":
		p.SetHTTP2(true)
	case "h2c":
		p.SetUnencryptedHTTP2(true)
	}
	tc := &tls.Config{}
	if e != nil {
		tc.RootCAs = e.ca.Pool()
	}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	var d net.Dialer
	tr := &http.Transport{
		Protocols:       &p,
		TLSClientConfig: tc,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, "127.0.0.1:"+tlsPortOf(addr))
		},
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func tlsGet(t testing.TB, c *http.Client, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// TestTLSListener runs the same TLS port with HTTP/1.1 (fasthttp) and
// HTTP/2 (net/http), for both key types, and checks which certificate
// each server name gets.
func TestTLSListener(t *testing.T) {
	for _, k := range tlstest.Kinds {
		t.Run(string(k), func(t *testing.T) {
			e := newTLSEnv(t, k)
			addr := tlsFreeAddr(t)
			a := e.site(t, "a.test", addr, "www.a.test")
			b := e.site(t, "b.test", addr)
			b.Default = true
			w := e.site(t, "*.w.test", addr)
			cfg := &config.Config{Sites: []*config.Site{a, b, w}, Listeners: []*config.Listener{tlsListenerFor(addr, true, a, b, w)}}
			tlsStart(t, cfg)
			port := tlsPortOf(addr)
			for _, proto := range []string{"h1", "h2"} {
				c := e.client(t, proto, nil)
				for _, host := range []string{"a.test", "www.a.test", "b.test", "x.w.test"} {
					resp, body := tlsGet(t, c, "https://"+host+":"+port+"/")
					want := map[string]string{"h1": "HTTP/1.1", "h2": "HTTP/2.0"}[proto]
					if resp.StatusCode != 200 || resp.Proto != want || !strings.Contains(body, "proto="+want+" tls=true host="+host) {
						t.Errorf("%s %s: %d %s %q", proto, host, resp.StatusCode, resp.Proto, body)
					}
				}
			}
			// Which certificate each name gets, without a request.
			for sni, want := range map[string]string{"a.test": "a.test", "WWW.A.TEST": "a.test", "b.test": "b.test",
				"deep.x.w.test": "*.w.test", "unknown.test": "b.test", "": "b.test"} {
				conn, err := tls.Dial("tcp", addr, &tls.Config{ServerName: sni, InsecureSkipVerify: true})
				if err != nil {
					t.Fatalf("sni %q: %v", sni, err)
				}
				if got := conn.ConnectionState().PeerCertificates[0].Subject.CommonName; got != want {
					t.Errorf("sni %q: certificate for %q, want %q", sni, got, want)
				}
				conn.Close()
			}
			// No ALPN at all: HTTP/1.1 on fasthttp.
			conn, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "a.test", RootCAs: e.ca.Pool()})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
			if !strings.Contains(string(body), "proto=HTTP/1.1 tls=true") {
				t.Errorf("no ALPN: %q", body)
			}
		})
	}
}

func TestHTTPSRedirectAndHSTS(t *testing.T) {
	e := newTLSEnv(t, tlstest.ECDSA)
	tlsAddr, plain := tlsFreeAddr(t), tlsFreeAddr(t)
	a := e.site(t, "a.test", tlsAddr, "www.a.test")
	a.HTTPSRedirect = []string{plain}
	a.HSTS = "max-age=63072000; includeSubDomains"
	b := e.site(t, "b.test", tlsAddr) // no HSTS
	pl := tlsListenerFor(plain, false)
	pl.Redirects = []string{"a.test"}
	cfg := &config.Config{Sites: []*config.Site{a, b}, Listeners: []*config.Listener{tlsListenerFor(tlsAddr, true, a, b), pl}}
	tlsStart(t, cfg)
	c := e.client(t, "h1", nil)
	resp, _ := tlsGet(t, c, "http://www.a.test:"+tlsPortOf(plain)+"/x/y?q=1")
	if want := "https://www.a.test:" + tlsPortOf(tlsAddr) + "/x/y?q=1"; resp.StatusCode != http.StatusPermanentRedirect || resp.Header.Get("Location") != want {
		t.Errorf("redirect: %d %q, want 308 %q", resp.StatusCode, resp.Header.Get("Location"), want)
	}
	if resp.Header.Get("Strict-Transport-Security") != "" {
		t.Error("HSTS sent over plain HTTP")
	}
	// The redirect goes only to a name the site serves (as Caddy's): a
	// Host it does not serve, which reached it as the plain listener's
	// default site, is sent to the site's own name, never to that Host.
	for _, host := range []string{"evil.example", "evil.example:" + tlsPortOf(plain), "127.0.0.1"} {
		resp, _ := tlsGet(t, c, "http://"+plain+"/x", "Host", host)
		if want := "https://a.test:" + tlsPortOf(tlsAddr) + "/x"; resp.StatusCode != http.StatusPermanentRedirect || resp.Header.Get("Location") != want {
			t.Errorf("Host %q: %d %q, want 308 %q", host, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
	for _, proto := range []string{"h1", "h2"} {
		c := e.client(t, proto, nil)
		resp, _ := tlsGet(t, c, "https://a.test:"+tlsPortOf(tlsAddr)+"/")
		if got := resp.Header.Get("Strict-Transport-Security"); got != a.HSTS {
			t.Errorf("%s: HSTS %q, want %q", proto, got, a.HSTS)
		}
		resp, _ = tlsGet(t, c, "https://b.test:"+tlsPortOf(tlsAddr)+"/")
		if got := resp.Header.Get("Strict-Transport-Security"); got != "" {
			t.Errorf("%s: HSTS %q on a site without it", proto, got)
		}
	}
}

// TestACMEChallengeBeforeRedirect checks that a pending HTTP-01 token is
// answered on a redirecting plain listener, and that other paths under
// the challenge prefix are still redirected.
func TestACMEChallengeBeforeRedirect(t *testing.T) {
	tlsAddr, plain := tlsFreeAddr(t), tlsFreeAddr(t)
	storage := t.TempDir()
	// autocert keeps pending HTTP-01 answers in its cache as TOKEN+http-01.
	if err := os.WriteFile(filepath.Join(storage, "tok123+http-01"), []byte("tok123.thumbprint"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := &config.Site{
		Name: "acme.test", Listen: []string{tlsAddr}, HTTPSRedirect: []string{plain},
		TLS: &config.TLS{MinVersion: "1.2", ACME: &config.ACME{
			// Nothing listens there: issuance fails and is retried later.
			Directory: "https://127.0.0.1:1/directory", Challenges: []string{"tls-alpn-01", "http-01"}, Storage: storage}},
		Routes: []*config.Route{{Path: "/", Kind: "proxy", Blocks: map[string]config.Block{"proxy": &proxy.Options{}}}},
	}
	pl := tlsListenerFor(plain, false)
	pl.Redirects = []string{"acme.test"}
	tlsStart(t, &config.Config{Sites: []*config.Site{a}, Listeners: []*config.Listener{tlsListenerFor(tlsAddr, true, a), pl}})
	c := (*tlsEnv)(nil).client(t, "h1", nil)
	resp, body := tlsGet(t, c, "http://acme.test:"+tlsPortOf(plain)+"/.well-known/acme-challenge/tok123")
	if resp.StatusCode != 200 || body != "tok123.thumbprint" {
		t.Errorf("challenge: %d %q", resp.StatusCode, body)
	}
	resp, _ = tlsGet(t, c, "http://acme.test:"+tlsPortOf(plain)+"/.well-known/acme-challenge/unknown")
	if resp.StatusCode != http.StatusPermanentRedirect {
		t.Errorf("unknown token: %d, want the redirect", resp.StatusCode)
	}
	// A name no site lists gets nothing from the manager.
	resp, _ = tlsGet(t, c, "http://other.test:"+tlsPortOf(plain)+"/.well-known/acme-challenge/tok123")
	if resp.StatusCode == 200 {
		t.Error("challenge answered for a name the config does not list")
	}
}

func TestClientCertificates(t *testing.T) {
	for _, k := range tlstest.Kinds {
		t.Run(string(k), func(t *testing.T) {
			e := newTLSEnv(t, k)
			clients := tlstest.NewCA(t, k)
			caFile := filepath.Join(e.dir, "clients.pem")
			os.WriteFile(caFile, clients.PEM, 0o600)
			addr := tlsFreeAddr(t)
			open := e.site(t, "open.test", addr)
			req := e.site(t, "req.test", addr)
			req.TLS.ClientAuth, req.TLS.ClientCA, req.TLS.ClientCertHeader = "require", caFile, testIDHeader
			opt := e.site(t, "opt.test", addr)
			opt.TLS.ClientAuth, opt.TLS.ClientCA, opt.TLS.ClientCertHeader = "verify_if_given", caFile, testIDHeader
			tlsStart(t, &config.Config{Sites: []*config.Site{open, req, opt}, Listeners: []*config.Listener{tlsListenerFor(addr, true, open, req, opt)}})
			port := tlsPortOf(addr)
			alice := clients.Client(t, "alice").TLS(t)
			for _, proto := range []string{"h1", "h2"} {
				anon, withCert := e.client(t, proto, nil), e.client(t, proto, &alice)
				if _, err := anon.Get("https://req.test:" + port + "/"); err == nil {
					t.Errorf("%s: require: request without a client certificate passed", proto)
				}
				_, body := tlsGet(t, withCert, "https://req.test:"+port+"/", testIDHeader, "CN=root")
				if !strings.Contains(body, "id=CN=alice,O=sluice tests") {
					t.Errorf("%s: require: %q, want alice's identity", proto, body)
				}
				_, body = tlsGet(t, anon, "https://opt.test:"+port+"/", testIDHeader, "CN=root")
				if !strings.HasSuffix(body, "id=") {
					t.Errorf("%s: verify_if_given without a certificate: %q, want no identity (spoof removed)", proto, body)
				}
				_, body = tlsGet(t, withCert, "https://opt.test:"+port+"/")
				if !strings.Contains(body, "id=CN=alice") {
					t.Errorf("%s: verify_if_given with a certificate: %q", proto, body)
				}
				_, body = tlsGet(t, anon, "https://open.test:"+port+"/", testIDHeader, "CN=root")
				if !strings.HasSuffix(body, "id=") {
					t.Errorf("%s: open site: %q, want the spoofed identity removed", proto, body)
				}
				// A connection made for open.test cannot reach req.test.
				resp, _ := tlsGet(t, anon, "https://open.test:"+port+"/", "Host", "req.test")
				if resp.StatusCode != http.StatusMisdirectedRequest {
					t.Errorf("%s: Host req.test on an open.test connection: %d, want 421", proto, resp.StatusCode)
				}
			}
		})
	}
}

func TestH2C(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprint("h2c=", on), func(t *testing.T) {
			addr := tlsFreeAddr(t)
			s := &config.Site{Name: "p.test", Listen: []string{addr}, Routes: []*config.Route{{Path: "/", Kind: "proxy", Blocks: map[string]config.Block{"proxy": &proxy.Options{}}}}}
			l := tlsListenerFor(addr, false, s)
			l.H2C = on
			tlsStart(t, &config.Config{Sites: []*config.Site{s}, Listeners: []*config.Listener{l}})
			var nilEnv *tlsEnv
			resp, body := tlsGet(t, nilEnv.client(t, "h1", nil), "http://p.test:"+tlsPortOf(addr)+"/")
			if resp.Proto != "HTTP/1.1" || !strings.Contains(body, "proto=HTTP/1.1 tls=false") {
				t.Errorf("HTTP/1.1: %s %q", resp.Proto, body)
			}
			c := nilEnv.client(t, "h2c", nil)
			r, err := c.Get("http://p.test:" + tlsPortOf(addr) + "/")
			if !on {
				if err == nil {
					r.Body.Close()
					t.Fatalf("h2c off: prior knowledge answered %s %d", r.Proto, r.StatusCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			if r.Proto != "HTTP/2.0" || !strings.Contains(string(b), "proto=HTTP/2.0 tls=false") {
				t.Errorf("h2c: %s %q", r.Proto, b)
			}
		})
	}
}

func TestTLSListenerLimits(t *testing.T) {
	e := newTLSEnv(t, tlstest.ECDSA)
	addr := tlsFreeAddr(t)
	a := e.site(t, "a.test", addr)
	l := tlsListenerFor(addr, true, a)
	l.MaxHeaderBytes = 4 << 10
	l.MaxRequestBody = 1 << 10
	l.ReadHeaderTimeout = 300 * time.Millisecond
	l.IdleTimeout = 300 * time.Millisecond
	tlsStart(t, &config.Config{Sites: []*config.Site{a}, Listeners: []*config.Listener{l}})
	url := "https://a.test:" + tlsPortOf(addr) + "/"
	h1 := e.client(t, "h1", nil)
	resp, _ := tlsGet(t, h1, url, "X-Big", strings.Repeat("x", 8<<10))
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("h1 big header: %d, want 431", resp.StatusCode)
	}
	for _, proto := range []string{"h1", "h2"} {
		r, err := e.client(t, proto, nil).Post(url, "text/plain", strings.NewReader(strings.Repeat("y", 4<<10)))
		if err != nil {
			t.Fatalf("%s: %v", proto, err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s big body: %d, want 413", proto, r.StatusCode)
		}
	}
	// A client that connects and never says hello is dropped after the
	// header timeout.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	began := time.Now()
	if _, err := c.Read(make([]byte, 1)); err == nil || time.Since(began) > 2*time.Second {
		t.Errorf("silent client: read %v after %v, want the server to close within the handshake timeout", err, time.Since(began))
	}
	// An idle keep-alive connection is closed after the idle timeout.
	tc, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "a.test", RootCAs: e.ca.Pool(), NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")
	br := bufio.NewReader(tc)
	r, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, r.Body)
	tc.SetReadDeadline(time.Now().Add(3 * time.Second))
	began = time.Now()
	if _, err := br.ReadByte(); err == nil || time.Since(began) > 2*time.Second {
		t.Errorf("idle connection: %v after %v, want closed by the idle timeout", err, time.Since(began))
	}
}
