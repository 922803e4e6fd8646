//go:build conformance

package store_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/conformance/internal/pebble"
	"github.com/sluicehq/sluice/host/tlsconf/tlstest"
)

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
	ca := tlstest.NewCA(t, tlstest.ECDSA)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	// 60-second certificates: renewal happens within the test, with room
	// for a slow first issuance before it.
	peb := pebble.Start(t, pebble.Options{CA: ca, HTTPPort: plainPorts[0], TLSPort: tlsPorts[0], Validity: 60,
		Addrs: []string{addrOf(p[9]), addrOf(p[10]), addrOf(p[11]), addrOf(p[12])}})
	dir := peb.Dir
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

func addrOf(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }
