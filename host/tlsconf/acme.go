package tlsconf

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"
)

// ACME obtains and renews a site's certificate from an ACME CA (Let's
// Encrypt, say) for every name of the site.
type ACME struct {
	// Email is the account contact; "" registers without one.
	Email string
	// Directory is the CA's directory URL; "" means Let's Encrypt
	// production.
	Directory string
	// Challenges lists the challenge types allowed: "tls-alpn-01"
	// (answered on the TLS listener) and "http-01" (answered on every
	// plain listener, before any redirect). nil means both.
	// tls-alpn-01 is tried first whenever both are allowed.
	Challenges []string
	// Storage is the directory where the account key and the
	// certificates are kept, so that a restart reuses them. Required
	// unless Cache is set.
	Storage string
	// Cache, when set, keeps them instead of Storage: the shared store,
	// which every instance of a deployment reads.
	Cache Storage
	// Lock, with Cache, makes the instances that share Cache order each
	// certificate (and its renewals) once: one takes the lock and orders,
	// the others wait and read the result from Cache.
	Lock Locker
	// RenewBefore is how long before expiry a certificate is renewed; 0
	// means a third of its lifetime, at most 30 days.
	RenewBefore time.Duration
	// HTTPClient talks to the CA; nil means http.DefaultClient. Tests set
	// one that trusts a private CA's directory certificate.
	HTTPClient *http.Client
}

// LetsEncrypt is the Let's Encrypt production directory.
const LetsEncrypt = acme.LetsEncryptURL

// acmeManager is one autocert.Manager, shared by every site and every
// generation with the same account settings. autocert cannot stop its
// renewal timers, so managers are kept for the life of the process
// rather than rebuilt (and leaked) at every reload; which names they may
// obtain certificates for follows the config through reference counts.
type acmeManager struct {
	key  string
	m    *autocert.Manager
	http http.Handler // nil when http-01 is not allowed
	alpn bool
	log  *slog.Logger
	// store is where certificates live (read without locking by
	// storedLeaf); shared, with a Lock, wraps it for autocert.
	store  Storage
	shared *sharedCache

	mu    sync.Mutex
	names map[string]int // name → references from live tables
}

var managers struct {
	mu   sync.Mutex
	byID map[string]*acmeManager
}

// acmeRef is one site's hold on a manager.
type acmeRef struct {
	m     *acmeManager
	names []string
	once  sync.Once
}

func (r *acmeRef) has(name string) bool { return slices.Contains(r.names, name) }

func (r *acmeRef) release() {
	r.once.Do(func() {
		r.m.mu.Lock()
		defer r.m.mu.Unlock()
		for _, n := range r.names {
			if r.m.names[n]--; r.m.names[n] <= 0 {
				delete(r.m.names, n)
			}
		}
	})
}

func acquireACME(a *ACME, names []string, log *slog.Logger) (*acmeRef, error) {
	if a.Storage == "" && a.Cache == nil {
		return nil, errors.New("acme: storage directory not set")
	}
	dir := a.Directory
	if dir == "" {
		dir = LetsEncrypt
	}
	chals := a.Challenges
	if chals == nil {
		chals = []string{"tls-alpn-01", "http-01"}
	}
	for _, c := range chals {
		if c != "tls-alpn-01" && c != "http-01" {
			return nil, fmt.Errorf("acme: challenge %q: want tls-alpn-01 or http-01", c)
		}
	}
	alpn, http01 := slices.Contains(chals, "tls-alpn-01"), slices.Contains(chals, "http-01")
	key := fmt.Sprintf("%s\x00%s\x00%s\x00%v\x00%v\x00%d\x00%p\x00%v\x00%v", dir, a.Email, a.Storage, alpn, http01, a.RenewBefore, a.HTTPClient, a.Cache, a.Lock)

	managers.mu.Lock()
	m := managers.byID[key]
	if m == nil {
		m = &acmeManager{key: key, alpn: alpn, log: log, names: map[string]int{}, store: autocert.DirCache(a.Storage)}
		cache := m.store
		if a.Cache != nil {
			m.store, cache = a.Cache, a.Cache
			if a.Lock != nil {
				m.shared = &sharedCache{inner: a.Cache, lock: a.Lock, renewBefore: a.RenewBefore, log: log}
				cache = m.shared
			}
		}
		m.m = &autocert.Manager{
			Prompt:      autocert.AcceptTOS,
			Cache:       cache,
			HostPolicy:  m.allowed,
			RenewBefore: a.RenewBefore,
			Email:       a.Email,
		}
		hc := http.DefaultClient
		if a.HTTPClient != nil {
			hc = a.HTTPClient
		}
		next := hc.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		wrapped := *hc
		wrapped.Transport = &acmeTransport{next: next, m: m, alpn: alpn, http01: http01}
		m.m.Client = &acme.Client{DirectoryURL: dir, HTTPClient: &wrapped, UserAgent: "sluice"}
		if http01 {
			m.http = m.m.HTTPHandler(http.NotFoundHandler())
		}
		if managers.byID == nil {
			managers.byID = map[string]*acmeManager{}
		}
		managers.byID[key] = m
	}
	managers.mu.Unlock()

	m.mu.Lock()
	for _, n := range names {
		m.names[n]++
	}
	m.mu.Unlock()
	return &acmeRef{m: m, names: names}, nil
}

// start obtains the ref's certificates in the background (from storage
// when they are there) until stop is closed.
func (r *acmeRef) start(stop <-chan struct{}) {
	for _, n := range r.names {
		go r.m.obtain(n, stop)
	}
}

// allowed is the HostPolicy: certificates only for names a live config
// lists.
func (m *acmeManager) allowed(_ context.Context, host string) error {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.names[host] > 0 {
		return nil
	}
	return fmt.Errorf("acme: %q is not a name of any site", host)
}

// obtain gets name's certificate ahead of the first client (from storage
// when it is there), retrying with backoff until it succeeds or the table
// that asked is closed. Renewal is autocert's from then on.
func (m *acmeManager) obtain(name string, stop <-chan struct{}) {
	hello := &tls.ClientHelloInfo{
		ServerName:       name,
		SignatureSchemes: []tls.SignatureScheme{tls.ECDSAWithP256AndSHA256, tls.PSSWithSHA256},
		SupportedCurves:  []tls.CurveID{tls.X25519, tls.CurveP256},
		CipherSuites:     []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
	}
	for wait := 10 * time.Second; ; wait = min(wait*2, time.Hour) {
		select {
		case <-stop:
			return
		default:
		}
		c, err := m.m.GetCertificate(hello)
		if err == nil {
			if c.Leaf != nil {
				m.log.Info("acme certificate ready", "name", name, "not_after", c.Leaf.NotAfter)
			}
			return
		}
		if errors.Is(err, errOrderedElsewhere) {
			// Another instance is ordering it: look again soon, without
			// growing the wait, and without a warning each time.
			wait = time.Second
			select {
			case <-stop:
				return
			case <-time.After(wait):
			}
			continue
		}
		m.log.Warn("acme: could not obtain a certificate; retrying", "name", name, "in", wait, "error", err)
		select {
		case <-stop:
			return
		case <-time.After(wait):
		}
	}
}

// storedLeaf returns the leaf of name's certificate as the manager keeps
// it in storage (autocert writes every issuance and renewal there), or
// nil when there is none yet. It reads storage only: never the CA.
func (m *acmeManager) storedLeaf(name string) *x509.Certificate {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// obtain asks for an ECDSA certificate, which autocert stores under
	// the bare name.
	data, err := m.store.Get(ctx, name)
	if err != nil {
		return nil
	}
	return firstCert(data)
}

// acmeTransport is the manager's way to the CA. It refuses every request
// while no live config uses the manager (autocert's renewal timers cannot
// be stopped: a retired manager must not keep ordering certificates), and
// it removes the challenge types the config does not allow from the
// authorizations the CA offers, because autocert always tries
// tls-alpn-01 first and cannot be told not to.
type acmeTransport struct {
	next         http.RoundTripper
	m            *acmeManager
	alpn, http01 bool

	mu       sync.Mutex
	newOrder string // the directory's newOrder URL, once seen
}

var errRetired = errors.New("acme: no site uses this account any more")

func (t *acmeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.m.mu.Lock()
	live := len(t.m.names) > 0
	t.m.mu.Unlock()
	if !live {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errRetired
	}
	if err := t.gate(req); err != nil {
		return nil, err
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK ||
		!strings.Contains(resp.Header.Get("Content-Type"), "json") {
		return resp, err
	}
	directory := req.Method == http.MethodGet
	if !directory && t.alpn && t.http01 {
		return resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if directory {
		t.learn(body)
	}
	body = t.filter(body)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return resp, nil
}

// filter drops disallowed challenges from an authorization object; any
// other body is returned as it is.
func (t *acmeTransport) filter(body []byte) []byte {
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil || obj["challenges"] == nil {
		return body
	}
	var chals []map[string]json.RawMessage
	if json.Unmarshal(obj["challenges"], &chals) != nil {
		return body
	}
	kept := chals[:0]
	for _, c := range chals {
		var typ string
		_ = json.Unmarshal(c["type"], &typ)
		if (typ == "tls-alpn-01" && t.alpn) || (typ == "http-01" && t.http01) {
			kept = append(kept, c)
		}
	}
	raw, err := json.Marshal(kept)
	if err != nil {
		return body
	}
	obj["challenges"] = raw
	out, err := json.Marshal(obj)
	if err != nil {
		return body
	}
	return out
}

func wantsACME(hello *tls.ClientHelloInfo) bool {
	return len(hello.SupportedProtos) == 1 && hello.SupportedProtos[0] == acme.ALPNProto
}

// ChallengeConfig answers a TLS-ALPN-01 validation: when the client
// offers only ALPN "acme-tls/1", it returns a config with the challenge
// certificate of the manager waiting for that name, and true. The
// listener closes such a connection once the handshake is done.
func ChallengeConfig(hello *tls.ClientHelloInfo) (*tls.Config, bool) {
	if !wantsACME(hello) {
		return nil, false
	}
	for _, m := range liveManagers() {
		if !m.alpn {
			continue
		}
		if c, err := m.m.GetCertificate(hello); err == nil {
			return &tls.Config{
				Certificates:           []tls.Certificate{*c},
				NextProtos:             []string{acme.ALPNProto},
				MinVersion:             tls.VersionTLS12,
				SessionTicketsDisabled: true,
			}, true
		}
	}
	// No manager knows the name: fail the handshake rather than serve a
	// site certificate under "acme-tls/1".
	return &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		return nil, errors.New("acme: no tls-alpn-01 challenge pending for this name")
	}}, true
}

// ChallengePrefix is the path under which HTTP-01 challenges are asked.
const ChallengePrefix = "/.well-known/acme-challenge/"

// HTTPChallenge answers an HTTP-01 validation request for host and path
// (under ChallengePrefix): the key authorization and true when a manager
// has the token, else false (the request is then served as usual).
func HTTPChallenge(host, path string) ([]byte, bool) {
	if !strings.HasPrefix(path, ChallengePrefix) {
		return nil, false
	}
	for _, m := range liveManagers() {
		if m.http == nil {
			continue
		}
		req := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: path}, Host: host, Header: http.Header{}}
		var rec recorder
		m.http.ServeHTTP(&rec, req.WithContext(context.Background()))
		if rec.status == http.StatusOK {
			return rec.body, true
		}
	}
	return nil, false
}

func liveManagers() []*acmeManager {
	managers.mu.Lock()
	defer managers.mu.Unlock()
	out := make([]*acmeManager, 0, len(managers.byID))
	for _, m := range managers.byID {
		m.mu.Lock()
		live := len(m.names) > 0
		m.mu.Unlock()
		if live {
			out = append(out, m)
		}
	}
	return out
}

// recorder is the smallest http.ResponseWriter: autocert's HTTP handler
// writes the key authorization into it.
type recorder struct {
	h      http.Header
	status int
	body   []byte
}

func (r *recorder) Header() http.Header {
	if r.h == nil {
		r.h = http.Header{}
	}
	return r.h
}
func (r *recorder) WriteHeader(s int) {
	if r.status == 0 {
		r.status = s
	}
}
func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body = append(r.body, p...)
	return len(p), nil
}
