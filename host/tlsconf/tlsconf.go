package tlsconf

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/host/internal/hostname"
	"github.com/sluicehq/sluice/host/internal/pemfile"
)

// ClientAuth is a site's client-certificate (mutual TLS) policy.
type ClientAuth int

const (
	// NoClientCert asks for no client certificate.
	NoClientCert ClientAuth = iota
	// RequireClientCert fails the handshake unless the client presents a
	// certificate that verifies against the site's client CAs.
	RequireClientCert
	// VerifyClientCertIfGiven asks for a certificate and verifies it when
	// the client presents one; a client without one is let through with
	// no identity.
	VerifyClientCertIfGiven
)

// ParseClientAuth maps the config words "", "require" and
// "verify_if_given" to a ClientAuth.
func ParseClientAuth(s string) (ClientAuth, error) {
	switch s {
	case "", "none":
		return NoClientCert, nil
	case "require":
		return RequireClientCert, nil
	case "verify_if_given":
		return VerifyClientCertIfGiven, nil
	}
	return 0, fmt.Errorf("client_auth %q: want \"require\" or \"verify_if_given\"", s)
}

func (c ClientAuth) tls() tls.ClientAuthType {
	switch c {
	case RequireClientCert:
		return tls.RequireAndVerifyClientCert
	case VerifyClientCertIfGiven:
		return tls.VerifyClientCertIfGiven
	}
	return tls.NoClientCert
}

// Site is the TLS side of one site.
type Site struct {
	// Name is the site's name, used in logs, as the ACME default name and
	// as the certificate's name when a client sends no SNI.
	Name string
	// Hosts are the names whose SNI selects this site: the name and its
	// aliases. "*.example.com" matches one or more labels before
	// ".example.com"; "*" and "_" match nothing by name (such a site is
	// reached as the default). Compared case-insensitively.
	Hosts []string
	// Default makes this site answer handshakes with no or an unknown
	// server name. When no site says so, the first site is the default.
	Default bool

	// CertFile and KeyFile are PEM files, reloaded when either changes
	// on disk. Exactly one of CertFile/KeyFile and ACME is set.
	CertFile, KeyFile string
	// ACME obtains and renews the certificate for Hosts.
	ACME *ACME

	// ClientAuth is the client-certificate policy; ClientCAFile the PEM
	// bundle client certificates are verified against (required unless
	// ClientAuth is NoClientCert).
	ClientAuth   ClientAuth
	ClientCAFile string
	// ClientCertHeader names the request header that carries the verified
	// client certificate's subject (RFC 4514) to filters and upstreams.
	// "" means none is sent. Any copy the client sent is removed.
	ClientCertHeader string

	// MinVersion is tls.VersionTLS12 or tls.VersionTLS13; 0 means 1.2.
	MinVersion uint16
	// HSTS is the Strict-Transport-Security value sent on this site's TLS
	// responses; "" sends none.
	HSTS string
}

// Options are the settings of a Table that are not per site.
type Options struct {
	// NextProtos are the ALPN protocols offered, in preference order;
	// nil means DefaultNextProtos.
	NextProtos []string
	// ReloadEvery is how often certificate files are checked for changes
	// (lazily, by the next handshake after it has passed); 0 means 2s,
	// negative never.
	ReloadEvery time.Duration
	// Log receives certificate reloads and ACME events; nil means
	// slog.Default().
	Log *slog.Logger

	check bool // set by Check: ACME sites obtain nothing
}

// DefaultNextProtos are the ALPN protocols offered by default: HTTP/2
// first, then HTTP/1.1.
var DefaultNextProtos = []string{"h2", "http/1.1"}

// cipherSuites are the TLS 1.2 suites offered: forward-secret ECDHE with
// AEAD ciphers only. TLS 1.3 suites are not configurable (and are all
// AEAD). Go orders them itself, by the hardware's AES support.
var cipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// curves are the key exchanges offered. crypto/tls uses this list as a
// filter and applies its own order: the post-quantum hybrid first for
// TLS 1.3 clients that offer it, then X25519, then the NIST curves; a
// group the client already sent a key share for is preferred over a
// HelloRetryRequest. P-521 is left out: slow, and no client needs it.
var curves = []tls.CurveID{tls.X25519MLKEM768, tls.X25519, tls.CurveP256, tls.CurveP384}

// Policy is what one site asks of TLS, as seen per request.
type Policy struct {
	// Name is the site's name.
	Name string
	// HSTS is the Strict-Transport-Security value; "" sends none.
	HSTS string
	// ClientAuth is the site's client-certificate policy.
	ClientAuth ClientAuth
	// ClientCertHeader names the identity header; "" sends none.
	ClientCertHeader string

	hosts  []string
	config *tls.Config
	cert   *keyPair
	acme   *acmeRef
	tag    []byte // binds session tickets to this site and its client CAs
}

// Table holds the TLS settings of the sites on one listener. It is built
// once per generation and safe for concurrent use.
type Table struct {
	policies []*Policy
	names    *hostname.Table[*Policy] // the rule route's Host follows too
	bySite   map[string]*Policy       // by site name, for the front door
	def      *Policy
	strip    []string
	log      *slog.Logger
	closed   atomic.Bool
	started  atomic.Bool
	stop     chan struct{}
}

// Start has the ACME sites obtain their certificates in the background,
// from storage when they are there, retrying until Close. The host calls
// it when the table's generation is swapped in. It is idempotent.
func (t *Table) Start() {
	if t.closed.Load() || t.started.Swap(true) {
		return
	}
	for _, p := range t.policies {
		if p.acme != nil {
			p.acme.start(t.stop)
		}
	}
}

// New builds the table of a listener's sites. It loads every certificate
// file and client CA now, so that a broken file fails the config load
// rather than a handshake. It starts nothing: Start has ACME sites obtain
// their certificates ahead of the first client (without it, a handshake
// for such a name obtains it, and waits).
func New(sites []Site, o Options) (_ *Table, err error) {
	if len(sites) == 0 {
		return nil, errors.New("tlsconf: no sites")
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.ReloadEvery == 0 {
		o.ReloadEvery = 2 * time.Second
	}
	if o.NextProtos == nil {
		o.NextProtos = DefaultNextProtos
	}
	t := &Table{names: hostname.New[*Policy](), bySite: map[string]*Policy{}, log: o.Log, stop: make(chan struct{})}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	headers := map[string]bool{}
	for i := range sites {
		s := &sites[i]
		p, err := t.newPolicy(s, o)
		if err != nil {
			return nil, fmt.Errorf("site %q: tls: %w", s.Name, err)
		}
		t.policies = append(t.policies, p)
		t.bySite[s.Name] = p
		if s.Default && t.def == nil {
			t.def = p
		}
		for _, h := range p.hosts {
			if q, ok := t.names.Add(h, p); !ok {
				return nil, fmt.Errorf("tlsconf: name %q claimed by sites %q and %q", h, q.Name, p.Name)
			}
		}
		if s.ClientCertHeader != "" && !headers[strings.ToLower(s.ClientCertHeader)] {
			headers[strings.ToLower(s.ClientCertHeader)] = true
			t.strip = append(t.strip, s.ClientCertHeader)
		}
	}
	if t.def == nil {
		t.def = t.policies[0]
	}
	return t, nil
}

// Check builds the table of sites as New does, loading every certificate,
// key and client CA, and closes it: it starts nothing (ACME sites obtain
// no certificate) and serves nothing. A file that cannot be used is a
// *FileError. `sluice validate` uses it.
func Check(sites []Site) error {
	t, err := New(sites, Options{Log: slog.New(slog.DiscardHandler), ReloadEvery: -1, check: true})
	if err != nil {
		return err
	}
	return t.Close()
}

func (t *Table) newPolicy(s *Site, o Options) (*Policy, error) {
	p := &Policy{Name: s.Name, HSTS: s.HSTS, ClientAuth: s.ClientAuth, ClientCertHeader: s.ClientCertHeader}
	for _, h := range append([]string{s.Name}, s.Hosts...) {
		h = strings.TrimSuffix(strings.ToLower(h), ".")
		if h != "" && !contains(p.hosts, h) {
			p.hosts = append(p.hosts, h)
		}
	}
	min := s.MinVersion
	if min == 0 {
		min = tls.VersionTLS12
	}
	if min != tls.VersionTLS12 && min != tls.VersionTLS13 {
		return nil, fmt.Errorf("min_version %#x: want TLS 1.2 or 1.3", min)
	}
	cfg := &tls.Config{
		MinVersion:       min,
		CipherSuites:     cipherSuites,
		CurvePreferences: curves,
		NextProtos:       o.NextProtos,
		ClientAuth:       s.ClientAuth.tls(),
		WrapSession:      p.wrapSession,
		UnwrapSession:    p.unwrapSession,
	}
	tag := sha256.New()
	fmt.Fprintf(tag, "%s\x00%d\x00", p.Name, s.ClientAuth)
	switch {
	case s.ACME != nil && (s.CertFile != "" || s.KeyFile != ""):
		return nil, errors.New("both acme and cert/key")
	case s.ACME != nil:
		var names []string
		for _, h := range p.hosts {
			if h != "*" && h != "_" && !strings.HasPrefix(h, "*.") {
				names = append(names, h)
			}
		}
		if len(names) == 0 {
			return nil, errors.New("acme: no name to obtain a certificate for (wildcards need dns-01)")
		}
		if o.check {
			break // Check: nothing is obtained
		}
		ref, err := acquireACME(s.ACME, names, t.log)
		if err != nil {
			return nil, err
		}
		p.acme = ref
		cfg.GetCertificate = p.acmeCertificate
	case s.CertFile != "" && s.KeyFile != "":
		kp, err := loadKeyPair(s.CertFile, s.KeyFile, o.ReloadEvery, t.log)
		if err != nil {
			return nil, err
		}
		p.cert = kp
		cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return kp.get(), nil }
	default:
		return nil, errors.New("no certificate: need cert and key, or acme")
	}
	if s.ClientAuth != NoClientCert {
		if s.ClientCAFile == "" {
			return nil, errors.New("client_auth needs client_ca")
		}
		pool, pem, err := pemfile.CertPool("client_ca", s.ClientCAFile)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs = pool
		tag.Write(pem)
	}
	p.tag = []byte("sluice/site=" + hex.EncodeToString(tag.Sum(nil)))
	p.config = cfg
	return p, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// acmeCertificate asks the ACME manager for the site's certificate. A
// client that sent no name, or a name of no site (it reached this site
// as the default), gets the certificate of the site's own name.
func (p *Policy) acmeCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name := strings.TrimSuffix(strings.ToLower(hello.ServerName), ".")
	if !p.acme.has(name) {
		h := *hello
		h.ServerName = p.acme.names[0]
		hello = &h
	}
	return p.acme.m.m.GetCertificate(hello)
}

// GetConfigForClient is the tls.Config callback of a listener: the
// settings of the site the client named (SNI), or of the default site.
// A TLS-ALPN-01 challenge (ALPN "acme-tls/1") is answered with the
// challenge certificate of whichever ACME manager is waiting for it.
func (t *Table) GetConfigForClient(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	if c, ok := ChallengeConfig(hello); ok {
		return c, nil
	}
	return t.ForServerName(hello.ServerName).config, nil
}

// ForServerName returns the policy of the site a TLS server name selects,
// or the default site's.
func (t *Table) ForServerName(name string) *Policy {
	if name == "" {
		return t.def
	}
	return t.Lookup([]byte(name))
}

// Lookup returns the policy of the site a name selects (a TLS server
// name, or a Host header with or without a port), chosen by
// host/internal/hostname's rule, the one routing by Host follows too
// (route.Table.Site); the default site's when it selects none. It does
// not allocate.
func (t *Table) Lookup(host []byte) *Policy {
	if p, ok := t.names.Lookup(host); ok {
		return p
	}
	return t.def
}

// Site returns the policy of the site with that name (the site routing
// chose for a request), or nil when the table has none by that name.
func (t *Table) Site(name string) *Policy { return t.bySite[name] }

// Misdirected reports whether a request for the site whose policy is p
// must be refused (421) on a connection whose handshake named sni: the
// site verifies client certificates, and the handshake was made under
// another site's policy, so the client was never asked for the
// certificate this site requires. p is the policy of the site routing
// chose (Site), so that TLS and routing agree on the site.
func (t *Table) Misdirected(p *Policy, sni string) bool {
	return p != nil && p.ClientAuth != NoClientCert && p != t.ForServerName(sni)
}

// StripHeaders returns the client-identity header names of every site:
// the host deletes them from every request, so that a client cannot
// spoof an identity.
func (t *Table) StripHeaders() []string { return t.strip }

// Close stops background work (ACME issuance retries) and releases the
// table's hold on shared ACME managers. It is idempotent.
func (t *Table) Close() error {
	if t.closed.Swap(true) {
		return nil
	}
	close(t.stop)
	for _, p := range t.policies {
		if p.acme != nil {
			p.acme.release()
		}
	}
	return nil
}

// Certificate is one certificate a table serves, for expiry metrics.
type Certificate struct {
	// Site is the name of the site that serves it.
	Site string
	// Name is what the certificate is for: the name an ACME certificate
	// was obtained for, or the first DNS name of a certificate file (its
	// subject's common name when it has none, else the site's name).
	Name string
	// NotAfter is when it expires.
	NotAfter time.Time
}

// Certificates lists the certificates the table serves now: each site's
// certificate file, as last (re)loaded, and each ACME certificate that
// is in the manager's storage (obtained or renewed; none while the first
// issuance is pending). It reads files for ACME sites, so it does not
// belong on the request path.
func (t *Table) Certificates() []Certificate {
	var out []Certificate
	for _, p := range t.policies {
		switch {
		case p.cert != nil:
			leaf := leafOf(p.cert.cur.Load())
			if leaf == nil {
				continue
			}
			name := p.Name
			switch {
			case len(leaf.DNSNames) > 0:
				name = leaf.DNSNames[0]
			case leaf.Subject.CommonName != "":
				name = leaf.Subject.CommonName
			}
			out = append(out, Certificate{Site: p.Name, Name: name, NotAfter: leaf.NotAfter})
		case p.acme != nil:
			for _, n := range p.acme.names {
				if leaf := p.acme.m.storedLeaf(n); leaf != nil {
					out = append(out, Certificate{Site: p.Name, Name: n, NotAfter: leaf.NotAfter})
				}
			}
		}
	}
	return out
}

// leafOf returns a certificate's parsed leaf (crypto/tls fills it in at
// load; parsed here when it did not).
func leafOf(c *tls.Certificate) *x509.Certificate {
	if c == nil {
		return nil
	}
	if c.Leaf != nil {
		return c.Leaf
	}
	if len(c.Certificate) == 0 {
		return nil
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		return nil
	}
	return leaf
}

// Identity returns the subject (RFC 4514) of the verified client
// certificate of a connection, or "" when the client presented none.
func Identity(cs *tls.ConnectionState) string {
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return ""
	}
	return cs.VerifiedChains[0][0].Subject.String()
}
