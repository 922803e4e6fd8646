// Package tlstest makes throwaway certificate authorities and
// certificates for tests: ECDSA P-256 or RSA 2048 keys, server
// certificates for names and IP addresses, client certificates.
package tlstest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// T is what the helpers need of a test: a testing.TB, or anything that
// fails loudly (TestMain has no TB).
type T interface {
	Helper()
	Fatal(args ...any)
}

// Kind is a key algorithm.
type Kind string

const (
	ECDSA Kind = "ecdsa"
	RSA   Kind = "rsa"
)

// Kinds lists every key algorithm, for tests that run once per kind.
var Kinds = []Kind{ECDSA, RSA}

// CA is a certificate authority.
type CA struct {
	Cert *x509.Certificate
	// PEM is the CA certificate, PEM-encoded.
	PEM  []byte
	key  crypto.Signer
	kind Kind
}

// rsaKey is a fixed RSA 2048 key for tests only: generating one takes
// seconds on a small machine, and tests need distinct certificates, not
// distinct keys.
var rsaKey = sync.OnceValue(func() *rsa.PrivateKey {
	b, _ := pem.Decode([]byte(rsaKeyPEM))
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		panic(err)
	}
	return k.(*rsa.PrivateKey)
})

const rsaKeyPEM = `-----BEGIN PRIVATE KEY-----
MIIEvwIBADANBgkqhkiG9w0BAQEFAASCBKkwggSlAgEAAoIBAQDWHPOlrIK8+YGA
i1RBpskMXQSht2FU49r4RZWNUDCJxnJPDXjRNhcbj8KKcXXdksex1MzRSK2uLc8i
PQ5Fg8FF3vYy+qmsRptozogCyNKgNcyvfHeiBntHH5vn6PGHwsxNYO/1hh/HC6Ih
2uGadYFyanp9P9r6p9Au85bXRHhDKRWRaWivL3shHts98GpUbInblO4Jz/peiES6
mfvqq0V6U6ERkRlgTlVsZ51nesCZrLKgqvthMH06juDbO7daRRGlwvx4gb3V1y9w
4hYNJMCbK8Bn4GXAYZJqyBFwoX6zxPw57+PBw2fRCHcam+N8AadzZbtkxVa+Z/xR
HX/2b3A9AgMBAAECggEABOpQO5bsv2rY6rsIGaO7DNIb15yOmvTKI5XxW3eiTZ9l
I2RzSBY+TI8tz6DQLGCAvhfdBdbtychab3ZIXBcsui5mp3/yojZSvgKzw6CZmTzy
8HpigrE0ZksW+Klz1gKGTyZxC8li9F5TgAR21mVpLde87SAopkVw9Yr5BQMY4a3G
hJAYEf70unsga9/ZSmNklRwglQZsSJ2J8avQchRAfT0YT7naVbKIC6Qst/z8Lt0B
e+0knu4AQjGJnw9BMHhyYI9mpXbx2wQNjt3GVZy8IjwxW/bfylEuE8wY0MJRBhL+
9eXeXHu0JBgo4mylYPIiVM4PKQxIB2W+A6DOXNgpQQKBgQDwv3k7LBQWjqpy57TT
US4cdOX8Br9LM7ofV+iPlmMnkxK9KhShfRlBt/dse0skcagaZK+/5ZyF0HnVmOM4
XYfMfAbDRkw7cT5hQJGKtGHUf3lpBnEF1Uec3VXWtdF3EuVlmKHemuS9Ai1KiTKn
NB84S0WM3ikU6Y77cENheLCEYQKBgQDjrYF38K7hTqwQtMssdF3Tfo38ynzEFwMj
u7nTdkeCd53fQWLDrv39eFXtAKe2C71pBwqJ08iDP+sMAiIA8sMU1mV+YzLRRF4s
jdgKId/Ol1g6QdTUW5Rnj6DrCTtvcTnveD254gfS6gesbRPZvqa/T4kWxVKmyela
fNSs+K35XQKBgQDp5KxsT5Oooqx4fCJS12DcJro103xQHI4r22VG8w2cKigffd2T
Uw2RqqCIVXSYkI+ILOAOqI4b94IWgbXnUf8YLDsJxqdTbN707x03S65sG/ihj6+I
wkAT53l44yYA8GvL+7Dvqz6lXpMQAiEjDuFx+Lc2d7Qj7BGMuPHNpcqgoQKBgQDa
WLRYVV8xvmQvpWNQH803niAHdh2PZM5i/47n6IAN9C9YQ3m3VuRIqJYnM8CjSsD8
r38AzTV4Ad2l54m6xRYnrrEpM3Mx1FJIgkPU+8WKeARp4mZ8vdMmOk1F+tWgO8Mn
EHaKBOYh9MUlLHqkET4TLPC5AMYSJIOBf0PrGpamFQKBgQC+9T6wr/DJKEB/pVj0
Tw3CbvRL9NJuHOi2JXEYKow2wqsQrhGn7Fj+iqtPke9z65fMduDPcdi0evs3Jyrp
G6c9rlF2m6dRhr3ZLf4PT+H3Wda+JHKbnrAXXZlj7rrzMozaT053fEPSkD7nynIH
bxinVp7GspFKX+2PqFMlcOh9Ww==
-----END PRIVATE KEY-----
`

func newKey(t T, k Kind) crypto.Signer {
	t.Helper()
	var (
		key crypto.Signer
		err error
	)
	if k == RSA {
		return rsaKey()
	} else {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	return key
}

var serial atomic.Int64

func nextSerial() *big.Int { return big.NewInt(serial.Add(1)<<20 | time.Now().UnixNano()&0xfffff) }

// NewCA makes a CA that issues certificates with keys of kind k. The CA's
// own key is always a fresh ECDSA key, so that two CAs never share one.
func NewCA(t T, k Kind) *CA {
	t.Helper()
	key := newKey(t, ECDSA)
	tmpl := &x509.Certificate{
		SerialNumber:          nextSerial(),
		Subject:               pkix.Name{CommonName: "sluice test CA " + string(k)},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &CA{Cert: c, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key, kind: k}
}

// Pool returns a pool holding only the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Pair is an issued certificate and its key.
type Pair struct {
	CertPEM, KeyPEM []byte
	Cert            *x509.Certificate
}

// TLS returns the pair as a tls.Certificate.
func (p Pair) TLS(t T) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Write stores the pair as cert.pem and key.pem files under dir with the
// given prefix and returns their paths.
func (p Pair) Write(t T, dir, prefix string) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, prefix+"cert.pem"), filepath.Join(dir, prefix+"key.pem")
	if err := os.WriteFile(certFile, p.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, p.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// Server issues a server certificate for names (DNS names or IP
// addresses); the first name is also the subject's common name.
func (ca *CA) Server(t T, names ...string) Pair {
	return ca.issue(t, x509.ExtKeyUsageServerAuth, names[0], names, time.Now().Add(24*time.Hour))
}

// ServerUntil is Server with a certificate that expires at notAfter.
func (ca *CA) ServerUntil(t T, notAfter time.Time, names ...string) Pair {
	return ca.issue(t, x509.ExtKeyUsageServerAuth, names[0], names, notAfter)
}

// Client issues a client certificate whose subject common name is cn.
func (ca *CA) Client(t T, cn string) Pair {
	return ca.issue(t, x509.ExtKeyUsageClientAuth, cn, nil, time.Now().Add(24*time.Hour))
}

func (ca *CA) issue(t T, usage x509.ExtKeyUsage, cn string, names []string, notAfter time.Time) Pair {
	t.Helper()
	key := newKey(t, ca.kind)
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"sluice tests"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	if ca.kind == RSA {
		tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return Pair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
		Cert:    c,
	}
}
