//go:build conformance

package store_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/conformance/internal/gotool"
	"github.com/sluicehq/sluice/host/tlsconf/tlstest"
)

const pebbleVersion = "v2.10.3" // as conformance/tls

// startProc runs a helper until the test ends, its output in the log on
// failure.
func startProc(t *testing.T, env []string, bin string, args ...string) {
	t.Helper()
	cmd := execCommand(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out := new(syncBuilder)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(bin), tail(out.String(), 3000))
		}
	})
}

// startPebble runs Pebble (and its DNS, answering 127.0.0.1 for every
// name) validating HTTP-01 on httpPort, with 60-second certificates so
// that renewal (a third of the lifetime before expiry) happens within the
// test, with room for a slow first issuance before it. Pebble, its DNS
// and their management APIs listen on the four ports p. It returns the directory URL and the file of the CA that signed
// Pebble's own HTTPS certificate, for SSL_CERT_FILE.
func startPebble(t *testing.T, httpPort, tlsPort int, p []int) (dir, caFile string) {
	bin := gotool.Install(t, "github.com/letsencrypt/pebble/v2/cmd/pebble", pebbleVersion)
	chall := gotool.Install(t, "github.com/letsencrypt/pebble/v2/cmd/pebble-challtestsrv", pebbleVersion)
	tmp := t.TempDir()
	ca := tlstest.NewCA(t, tlstest.ECDSA)
	caFile = filepath.Join(tmp, "ca.pem")
	os.WriteFile(caFile, ca.PEM, 0o600)
	cert, key := ca.Server(t, "127.0.0.1", "localhost").Write(t, tmp, "pebble-")
	addr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", p[i]) }
	dns, api, mgmt, challMgmt := addr(0), addr(1), addr(2), addr(3)
	startProc(t, nil, chall, "-dnsserver", dns, "-defaultIPv4", "127.0.0.1", "-defaultIPv6", "",
		"-http01", "", "-https01", "", "-tlsalpn01", "", "-doh", "", "-management", challMgmt)
	cfg := map[string]any{"pebble": map[string]any{
		"listenAddress":           api,
		"managementListenAddress": mgmt,
		"certificate":             cert,
		"privateKey":              key,
		"httpPort":                httpPort,
		"tlsPort":                 tlsPort,
		"ocspResponderURL":        "",
		"retryAfter":              map[string]int{"authz": 1, "order": 1},
		"profiles":                map[string]any{"default": map[string]any{"description": "short", "validityPeriod": 60}},
	}}
	raw, _ := json.Marshal(cfg)
	cfgFile := filepath.Join(tmp, "pebble.json")
	os.WriteFile(cfgFile, raw, 0o600)
	startProc(t, []string{"PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0", "PEBBLE_AUTHZREUSE=0"},
		bin, "-config", cfgFile, "-dnsserver", dns)
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := c.Get("https://" + api + "/dir")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return "https://" + api + "/dir", caFile
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pebble did not come up: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

const acmeConfig = `
store "redis" {
  address = %[1]q
  prefix  = "acme-conf:"
}
admin {
  listen = "127.0.0.1:%[4]d"
}
site "shared.sluice.test" {
  listen         = ["127.0.0.1:%[2]d"]
  https_redirect = ["127.0.0.1:%[3]d"]
  tls {
    acme {
      email      = "ops@sluice.test"
      directory  = %[5]q
      challenges = ["http-01"]
    }
  }
  route "/" {
    respond {
      body = "hello"
    }
  }
}
`

// leafOf returns the certificate an instance serves for name, or nil.
func leafOf(port int, name string) *x509.Certificate {
	d := &net.Dialer{Timeout: 2 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{ServerName: name, InsecureSkipVerify: true})
	if err != nil {
		return nil
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0]
}

// TestSharedACME: three instances, one store, one CA. Only the first
// instance is where Pebble validates (its ports are Pebble's httpPort and
// tlsPort), as behind a load balancer any instance may be; whichever
// instance orders, the challenge answer is in the store. Exactly one
// order is made, all three serve its certificate, and its renewal is
// ordered once too.
func TestSharedACME(t *testing.T) {
	const name = "shared.sluice.test"
	r := startRedis(t)
	p := freePorts(t, 13)
	tlsPorts, plainPorts, adminPorts := p[0:3], p[3:6], p[6:9]
	dir, caFile := startPebble(t, plainPorts[0], tlsPorts[0], p[9:13])
	var ins []*instance
	for i := range 3 {
		admin := adminPorts[i]
		text := fmt.Sprintf(acmeConfig, r.Addr(), tlsPorts[i], plainPorts[i], admin, dir)
		ins = append(ins, runSluice(t, text, tlsPorts[i], admin, "SSL_CERT_FILE="+caFile))
	}
	orders := func() (n int) {
		for _, in := range ins {
			n += strings.Count(in.out.String(), `msg="acme: new order"`)
		}
		return n
	}
	// all waits until the three serve one certificate other than not, and
	// returns it.
	all := func(not *x509.Certificate, within time.Duration) *x509.Certificate {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			var leaves []*x509.Certificate
			for _, p := range tlsPorts {
				if l := leafOf(p, name); l != nil && l.Issuer.CommonName != "" && (not == nil || l.SerialNumber.Cmp(not.SerialNumber) != 0) {
					leaves = append(leaves, l)
				}
			}
			if len(leaves) == 3 && leaves[0].SerialNumber.Cmp(leaves[1].SerialNumber) == 0 && leaves[1].SerialNumber.Cmp(leaves[2].SerialNumber) == 0 {
				return leaves[0]
			}
			if time.Now().After(deadline) {
				t.Fatalf("the three instances do not serve one certificate within %v (%d ready)", within, len(leaves))
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	first := all(nil, 60*time.Second)
	t.Logf("all three serve serial %s, valid until %s", first.SerialNumber, first.NotAfter.Format(time.TimeOnly))
	if n := orders(); n != 1 {
		t.Fatalf("%d orders for %s across three instances, want 1", n, name)
	}
	// The 60-second certificate is due 20 seconds before it expires.
	renewed := all(first, time.Until(first.NotAfter)+20*time.Second)
	t.Logf("all three serve the renewed serial %s, valid until %s", renewed.SerialNumber, renewed.NotAfter.Format(time.TimeOnly))
	if n := orders(); n != 2 {
		t.Fatalf("%d orders after one renewal across three instances, want 2", n)
	}
}
