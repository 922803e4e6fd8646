package tlsconf_test

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/internal/hostname/hostnametest"
	"github.com/sluicehq/sluice/host/tlsconf"
	"github.com/sluicehq/sluice/host/tlsconf/tlstest"
)

// handshake runs one TLS handshake against table over an in-memory pipe
// and returns the client's view of it.
func handshake(t testing.TB, table *tlsconf.Table, cc *tls.Config) (tls.ConnectionState, tls.ConnectionState, error) {
	t.Helper()
	c, s := tcpPair(t)
	defer c.Close()
	defer s.Close()
	srv := tls.Server(s, &tls.Config{GetConfigForClient: table.GetConfigForClient})
	var (
		wg      sync.WaitGroup
		srvErr  error
		srvConn tls.ConnectionState
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		srvErr = srv.Handshake()
		srvConn = srv.ConnectionState()
		if srvErr == nil {
			// TLS 1.3 sends client-certificate alerts and tickets after
			// the handshake: read so the client sees them.
			srv.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			var b [1]byte
			srv.Read(b[:])
		}
		s.Close()
	}()
	cli := tls.Client(c, cc)
	err := cli.Handshake()
	if err == nil {
		// Make the client read the server's post-handshake messages
		// (tickets) and any alert about its certificate.
		cli.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		var b [1]byte
		_, rerr := cli.Read(b[:])
		if ne, ok := rerr.(net.Error); rerr != nil && !(ok && ne.Timeout()) && rerr.Error() != "EOF" {
			err = rerr
		}
	}
	cs := cli.ConnectionState()
	c.Close()
	wg.Wait()
	if err == nil {
		err = srvErr
	}
	return cs, srvConn, err
}

// tcpPair returns both ends of a loopback TCP connection: unlike
// net.Pipe, the kernel buffers writes, as a real client's would be.
func tcpPair(t testing.TB) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return c, s
}

type fixture struct {
	ca    *tlstest.CA
	dir   string
	files map[string][2]string // site → cert, key
}

func newFixture(t *testing.T, k tlstest.Kind, sites map[string][]string) *fixture {
	f := &fixture{ca: tlstest.NewCA(t, k), dir: t.TempDir(), files: map[string][2]string{}}
	for name, names := range sites {
		c, key := f.ca.Server(t, names...).Write(t, f.dir, filepath.Base(name)+"-")
		f.files[name] = [2]string{c, key}
	}
	return f
}

func (f *fixture) site(name string, hosts ...string) tlsconf.Site {
	return tlsconf.Site{Name: name, Hosts: hosts, CertFile: f.files[name][0], KeyFile: f.files[name][1]}
}

func (f *fixture) client(sni string) *tls.Config {
	return &tls.Config{ServerName: sni, RootCAs: f.ca.Pool(), InsecureSkipVerify: sni == "", NextProtos: []string{"h2", "http/1.1"}}
}

func TestSNI(t *testing.T) {
	for _, k := range tlstest.Kinds {
		t.Run(string(k), func(t *testing.T) {
			f := newFixture(t, k, map[string][]string{
				"a.test":   {"a.test", "www.a.test"},
				"b.test":   {"b.test"},
				"*.w.test": {"*.w.test"},
			})
			b := f.site("b.test")
			b.Default = true
			table, err := tlsconf.New([]tlsconf.Site{f.site("a.test", "www.a.test"), b, f.site("*.w.test")}, tlsconf.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer table.Close()
			cases := []struct{ sni, want string }{
				{"a.test", "a.test"},
				{"WWW.A.test", "a.test"},
				{"b.test", "b.test"},
				{"x.w.test", "*.w.test"},
				{"unknown.test", "b.test"}, // default
				{"", "b.test"},             // no SNI: default
			}
			for _, c := range cases {
				cs, _, err := handshake(t, table, f.client(c.sni))
				if c.sni == "unknown.test" {
					// The default certificate does not cover the name: a
					// verifying client refuses it, as it should.
					if err == nil {
						t.Errorf("sni %q: handshake passed with the default certificate", c.sni)
					}
					cc := f.client(c.sni)
					cc.InsecureSkipVerify = true
					cs, _, err = handshake(t, table, cc)
				}
				if err != nil {
					t.Fatalf("sni %q: %v", c.sni, err)
				}
				if got := cs.PeerCertificates[0].Subject.CommonName; got != c.want {
					t.Errorf("sni %q: served %q, want %q", c.sni, got, c.want)
				}
				if cs.NegotiatedProtocol != "h2" {
					t.Errorf("sni %q: alpn %q, want h2", c.sni, cs.NegotiatedProtocol)
				}
				if cs.Version != tls.VersionTLS13 {
					t.Errorf("sni %q: version %x, want TLS 1.3", c.sni, cs.Version)
				}
			}
		})
	}
}

func TestModernDefaults(t *testing.T) {
	f := newFixture(t, tlstest.ECDSA, map[string][]string{"a.test": {"a.test"}})
	table, err := tlsconf.New([]tlsconf.Site{f.site("a.test")}, tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer table.Close()
	old := f.client("a.test")
	old.MaxVersion = tls.VersionTLS11
	old.MinVersion = tls.VersionTLS10
	if _, _, err := handshake(t, table, old); err == nil {
		t.Error("TLS 1.1 accepted")
	}
	cbc := f.client("a.test")
	cbc.MaxVersion = tls.VersionTLS12
	cbc.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}
	if _, _, err := handshake(t, table, cbc); err == nil {
		t.Error("CBC suite accepted on TLS 1.2")
	}
	v12 := f.client("a.test")
	v12.MaxVersion = tls.VersionTLS12
	cs, _, err := handshake(t, table, v12)
	if err != nil {
		t.Fatal(err)
	}
	if cs.Version != tls.VersionTLS12 || cs.CipherSuite != tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 && cs.CipherSuite != tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 {
		t.Errorf("TLS 1.2: version %x suite %s", cs.Version, tls.CipherSuiteName(cs.CipherSuite))
	}
	classic := f.client("a.test")
	classic.CurvePreferences = []tls.CurveID{tls.CurveP256, tls.X25519}
	cs, _, err = handshake(t, table, classic)
	if err != nil {
		t.Fatal(err)
	}
	if cs.CurveID != tls.X25519 {
		t.Errorf("key exchange %v, want X25519 first among classical groups", cs.CurveID)
	}
}

func TestMinVersion13(t *testing.T) {
	f := newFixture(t, tlstest.RSA, map[string][]string{"a.test": {"a.test"}})
	s := f.site("a.test")
	s.MinVersion = tls.VersionTLS13
	table, err := tlsconf.New([]tlsconf.Site{s}, tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer table.Close()
	v12 := f.client("a.test")
	v12.MaxVersion = tls.VersionTLS12
	if _, _, err := handshake(t, table, v12); err == nil {
		t.Error("TLS 1.2 accepted with min_version 1.3")
	}
}

func TestCertificateReload(t *testing.T) {
	for _, k := range tlstest.Kinds {
		t.Run(string(k), func(t *testing.T) {
			f := newFixture(t, k, map[string][]string{"a.test": {"a.test"}})
			table, err := tlsconf.New([]tlsconf.Site{f.site("a.test")}, tlsconf.Options{ReloadEvery: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer table.Close()
			serial := func() string {
				t.Helper()
				cs, _, err := handshake(t, table, f.client("a.test"))
				if err != nil {
					t.Fatal(err)
				}
				return cs.PeerCertificates[0].SerialNumber.String()
			}
			first := serial()
			next := f.ca.Server(t, "a.test")
			// Rename into place, as certbot and Kubernetes do.
			tmp := t.TempDir()
			c, key := next.Write(t, tmp, "")
			if err := os.Rename(key, f.files["a.test"][1]); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(c, f.files["a.test"][0]); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
			serial() // the handshake that notices the change
			if got := serial(); got != next.Cert.SerialNumber.String() || got == first {
				t.Fatalf("after rename: serial %s, want %s (was %s)", got, next.Cert.SerialNumber, first)
			}
			// A broken file keeps the last good certificate.
			if err := os.WriteFile(f.files["a.test"][0], []byte("not a certificate"), 0o600); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
			serial()
			if got := serial(); got != next.Cert.SerialNumber.String() {
				t.Fatalf("after a broken write: serial %s, want %s", got, next.Cert.SerialNumber)
			}
			// Rewriting in place is seen too.
			third := f.ca.Server(t, "a.test")
			third.Write(t, f.dir, "a.test-")
			time.Sleep(5 * time.Millisecond)
			serial()
			if got := serial(); got != third.Cert.SerialNumber.String() {
				t.Fatalf("after rewrite: serial %s, want %s", got, third.Cert.SerialNumber)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	f := newFixture(t, tlstest.ECDSA, map[string][]string{"a.test": {"a.test"}})
	bad := f.site("a.test")
	bad.CertFile = filepath.Join(f.dir, "missing.pem")
	noCA := f.site("a.test")
	noCA.ClientAuth = tlsconf.RequireClientCert
	empty := tlsconf.Site{Name: "x.test"}
	for name, s := range map[string]tlsconf.Site{"missing file": bad, "client auth without CA": noCA, "no certificate": empty} {
		if tb, err := tlsconf.New([]tlsconf.Site{s}, tlsconf.Options{}); err == nil {
			tb.Close()
			t.Errorf("%s: no error", name)
		}
	}
}

func TestClientAuth(t *testing.T) {
	for _, k := range tlstest.Kinds {
		t.Run(string(k), func(t *testing.T) {
			f := newFixture(t, k, map[string][]string{"req.test": {"req.test"}, "opt.test": {"opt.test"}, "open.test": {"open.test"}})
			clientCA := tlstest.NewCA(t, k)
			caFile := filepath.Join(f.dir, "clients.pem")
			os.WriteFile(caFile, clientCA.PEM, 0o600)
			req, opt := f.site("req.test"), f.site("opt.test")
			req.ClientAuth, req.ClientCAFile, req.ClientCertHeader = tlsconf.RequireClientCert, caFile, "X-Client-Subject"
			opt.ClientAuth, opt.ClientCAFile, opt.ClientCertHeader = tlsconf.VerifyClientCertIfGiven, caFile, "x-client-subject"
			table, err := tlsconf.New([]tlsconf.Site{req, opt, f.site("open.test")}, tlsconf.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer table.Close()
			if got := table.StripHeaders(); len(got) != 1 {
				t.Errorf("StripHeaders = %q, want one name", got)
			}
			good := clientCA.Client(t, "alice").TLS(t)
			stranger := tlstest.NewCA(t, k).Client(t, "mallory").TLS(t)
			withCert := func(sni string, c *tls.Certificate) *tls.Config {
				cc := f.client(sni)
				if c != nil {
					cc.Certificates = []tls.Certificate{*c}
				}
				return cc
			}
			cases := []struct {
				sni      string
				cert     *tls.Certificate
				ok       bool
				identity string
			}{
				{"req.test", nil, false, ""},
				{"req.test", &stranger, false, ""},
				{"req.test", &good, true, "CN=alice,O=sluice tests"},
				{"opt.test", nil, true, ""},
				{"opt.test", &stranger, false, ""},
				{"opt.test", &good, true, "CN=alice,O=sluice tests"},
				{"open.test", &good, true, ""},
			}
			for _, c := range cases {
				_, srv, err := handshake(t, table, withCert(c.sni, c.cert))
				if (err == nil) != c.ok {
					t.Errorf("%s with cert %v: err %v, want ok=%v", c.sni, c.cert != nil, err, c.ok)
					continue
				}
				if c.ok {
					if got := tlsconf.Identity(&srv); got != c.identity {
						t.Errorf("%s: identity %q, want %q", c.sni, got, c.identity)
					}
				}
			}
			// A request for the mTLS site on a connection made for another
			// site is misdirected; the reverse is fine.
			if !table.Misdirected(table.Lookup([]byte("req.test")), "open.test") || !table.Misdirected(table.Lookup([]byte("req.test:8443")), "opt.test") {
				t.Error("request for req.test on an open.test connection not misdirected")
			}
			if table.Misdirected(table.Lookup([]byte("REQ.test:443")), "req.test") || table.Misdirected(table.Lookup([]byte("open.test")), "req.test") {
				t.Error("misdirected wrongly")
			}
		})
	}
}

// sharedCache hands every session to every server name, to try a ticket
// of one site on another.
type sharedCache struct {
	mu sync.Mutex
	cs *tls.ClientSessionState
}

func (c *sharedCache) Get(string) (*tls.ClientSessionState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cs, c.cs != nil
}
func (c *sharedCache) Put(_ string, cs *tls.ClientSessionState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs != nil {
		c.cs = cs
	}
}

func TestResumption(t *testing.T) {
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		t.Run(tls.VersionName(v), func(t *testing.T) {
			f := newFixture(t, tlstest.ECDSA, map[string][]string{"a.test": {"a.test"}, "b.test": {"b.test"}})
			clientCA := tlstest.NewCA(t, tlstest.ECDSA)
			caFile := filepath.Join(f.dir, "clients.pem")
			os.WriteFile(caFile, clientCA.PEM, 0o600)
			b := f.site("b.test")
			b.ClientAuth, b.ClientCAFile = tlsconf.VerifyClientCertIfGiven, caFile
			table, err := tlsconf.New([]tlsconf.Site{f.site("a.test"), b}, tlsconf.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer table.Close()
			cache := &sharedCache{}
			cc := f.client("a.test")
			cc.MaxVersion = v
			cc.ClientSessionCache = cache
			if cs, _, err := handshake(t, table, cc); err != nil || cs.DidResume {
				t.Fatalf("first: err %v resumed %v", err, cs.DidResume)
			}
			if cs, _, err := handshake(t, table, cc); err != nil || !cs.DidResume {
				t.Fatalf("second: err %v resumed %v, want a resumption", err, cs.DidResume)
			}
			// The ticket from a.test is not good for b.test.
			cb := cc.Clone()
			cb.ServerName = "b.test"
			cb.InsecureSkipVerify = true // the shared cache's session names a.test
			cb.VerifyPeerCertificate = func([][]byte, [][]*x509.Certificate) error { return nil }
			if cs, _, err := handshake(t, table, cb); err != nil || cs.DidResume {
				t.Fatalf("cross-site: err %v resumed %v, want a full handshake", err, cs.DidResume)
			}
			// After rotations past the kept keys, old tickets stop working.
			cache.Put("", nil)
			if _, _, err := handshake(t, table, cc); err != nil {
				t.Fatal(err)
			}
			for range tlsconf.TicketKeysKept {
				tlsconf.RotateTicketKeys()
			}
			if cs, _, err := handshake(t, table, cc); err != nil || cs.DidResume {
				t.Fatalf("after rotation: err %v resumed %v, want a full handshake", err, cs.DidResume)
			}
		})
	}
}

func TestLookupAllocs(t *testing.T) {
	f := newFixture(t, tlstest.ECDSA, map[string][]string{"a.test": {"a.test"}, "*.w.test": {"*.w.test"}})
	table, err := tlsconf.New([]tlsconf.Site{f.site("a.test"), f.site("*.w.test")}, tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer table.Close()
	hosts := [][]byte{[]byte("A.test:8443"), []byte("deep.x.W.test"), []byte("[::1]:443"), []byte("nope")}
	want := []string{"a.test", "*.w.test", "a.test", "a.test"}
	for i, h := range hosts {
		if got := table.Lookup(h).Name; got != want[i] {
			t.Errorf("Lookup(%s) = %s, want %s", h, got, want[i])
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		for _, h := range hosts {
			table.Lookup(h)
		}
	}); n != 0 {
		t.Errorf("Lookup allocates %v times", n)
	}
}

// TestLookupNames runs hostname's shared table through the handshake's
// choice (ForServerName) and Lookup: the names route.Table.Site is held
// to as well (route.TestSiteNames), so SNI and Host pick the same site.
func TestLookupNames(t *testing.T) {
	f := newFixture(t, tlstest.ECDSA, map[string][]string{"cert": {"a.test"}})
	var sites []tlsconf.Site
	for _, s := range hostnametest.Sites {
		sites = append(sites, tlsconf.Site{Name: s.Name, Hosts: s.Aliases, Default: s.Name == hostnametest.Default,
			CertFile: f.files["cert"][0], KeyFile: f.files["cert"][1]})
	}
	table, err := tlsconf.New(sites, tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer table.Close()
	for _, c := range hostnametest.Names {
		if got := table.ForServerName(c.Name).Name; got != c.Site {
			t.Errorf("ForServerName(%q) = %q, want %q", c.Name, got, c.Site)
		}
		if got := table.Lookup([]byte(c.Name)).Name; got != c.Site {
			t.Errorf("Lookup(%q) = %q, want %q", c.Name, got, c.Site)
		}
	}
}
