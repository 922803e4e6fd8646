// Package pebble runs Let's Encrypt's Pebble ACME server, with its
// challenge test server as the DNS answering 127.0.0.1 for every name,
// for the suites that order certificates from it (conformance/tls,
// conformance/store). Both are built with gotool, pinned to Version.
//
// Validation is real (no PEBBLE_VA_ALWAYS_VALID), without the random
// sleeps and bad nonces Pebble adds to shake clients, and with no reuse of
// valid authorizations, so that a renewal is validated again.
package pebble

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/conformance/internal/gotool"
	"github.com/sluicehq/sluice/host/tlsconf/tlstest"
)

// Version is the Pebble both suites run.
const Version = "v2.10.3"

// Options say where Pebble listens and validates.
type Options struct {
	// CA signs Pebble's own HTTPS certificate; the ACME client must
	// trust it (SSL_CERT_FILE).
	CA *tlstest.CA
	// HTTPPort and TLSPort are where Pebble validates HTTP-01 and
	// TLS-ALPN-01 challenges: sluice's ports.
	HTTPPort, TLSPort int
	// Addrs are the DNS server's, the ACME API's, its management API's
	// and the challenge server's management addresses; free loopback
	// ports when nil.
	Addrs []string
	// Validity is the lifetime of the certificates, in seconds; short,
	// so that renewal (at a third of the lifetime left) happens within a
	// test.
	Validity int
}

// Pebble is a running Pebble, stopped when the test ends.
type Pebble struct {
	// Dir is the ACME directory URL.
	Dir string
	// Root is the pool of the roots Pebble issues under.
	Root *x509.CertPool
}

// Start runs Pebble until t ends and waits (30 s at most) until it
// answers. When Pebble cannot be built the test is skipped (gotool).
func Start(t *testing.T, o Options) *Pebble {
	t.Helper()
	bin := gotool.Install(t, "github.com/letsencrypt/pebble/v2/cmd/pebble", Version)
	chall := gotool.Install(t, "github.com/letsencrypt/pebble/v2/cmd/pebble-challtestsrv", Version)
	dir := t.TempDir()
	cert, key := o.CA.Server(t, "127.0.0.1", "localhost").Write(t, dir, "pebble-")
	addrs := o.Addrs
	if addrs == nil {
		addrs = []string{freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)}
	}
	dns, api, mgmt, challMgmt := addrs[0], addrs[1], addrs[2], addrs[3]
	startProc(t, nil, chall, "-dnsserver", dns, "-defaultIPv4", "127.0.0.1", "-defaultIPv6", "",
		"-http01", "", "-https01", "", "-tlsalpn01", "", "-doh", "", "-management", challMgmt)
	raw, _ := json.Marshal(map[string]any{"pebble": map[string]any{
		"listenAddress":           api,
		"managementListenAddress": mgmt,
		"certificate":             cert,
		"privateKey":              key,
		"httpPort":                o.HTTPPort,
		"tlsPort":                 o.TLSPort,
		"ocspResponderURL":        "",
		"retryAfter":              map[string]int{"authz": 1, "order": 1},
		"profiles":                map[string]any{"default": map[string]any{"description": "short", "validityPeriod": o.Validity}},
	}})
	cfgFile := filepath.Join(dir, "pebble.json")
	if err := os.WriteFile(cfgFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	startProc(t, []string{"PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0", "PEBBLE_AUTHZREUSE=0"},
		bin, "-config", cfgFile, "-dnsserver", dns)
	p := &Pebble{Dir: "https://" + api + "/dir"}
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: o.CA.Pool()}}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		if p.Root, err = roots(c, p.Dir, "https://"+mgmt+"/roots/0"); err == nil {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("pebble did not come up: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// roots asks for the directory, then for the roots Pebble issues under.
func roots(c *http.Client, dir, rootURL string) (*x509.CertPool, error) {
	if _, err := get(c, dir); err != nil {
		return nil, err
	}
	b, err := get(c, rootURL)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s: no certificate", rootURL)
	}
	return pool, nil
}

func get(c *http.Client, url string) ([]byte, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", url, resp.Status)
	}
	return b, err
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

// startProc runs a helper until the test ends, its output in the log on
// failure.
func startProc(t *testing.T, env []string, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out := new(tailBuffer)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(bin), out.String())
		}
	})
}

// tailBuffer keeps the last tailMax bytes a process wrote to its two
// outputs: what a failed test shows, whatever the process wrote before.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

const tailMax = 6000

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - tailMax; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
