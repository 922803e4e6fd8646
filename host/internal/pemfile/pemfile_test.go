package pemfile

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// write creates a self-signed certificate and its key, and a second key,
// and returns their paths.
func write(t *testing.T) (cert, key, otherKey, text string) {
	dir := t.TempDir()
	pemOf := func(typ string, der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}) }
	k1, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	k2, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "t"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k1.PublicKey, k1)
	if err != nil {
		t.Fatal(err)
	}
	kd1, _ := x509.MarshalECPrivateKey(k1)
	kd2, _ := x509.MarshalECPrivateKey(k2)
	files := map[string][]byte{"cert.pem": pemOf("CERTIFICATE", der), "key.pem": pemOf("EC PRIVATE KEY", kd1),
		"other.pem": pemOf("EC PRIVATE KEY", kd2), "text.txt": []byte("not PEM\n")}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "other.pem"), filepath.Join(dir, "text.txt")
}

func TestKeyPairBlame(t *testing.T) {
	cert, key, other, text := write(t)
	if _, err := KeyPair(cert, key); err != nil {
		t.Fatalf("a matching pair: %v", err)
	}
	cases := []struct{ cert, key, attr string }{
		{cert, other, "key"},             // not the certificate's key
		{text, key, "cert"},              // no PEM certificate
		{key, key, "cert"},               // a key where the certificate should be
		{cert, text, "key"},              // no PEM key
		{cert + ".missing", key, "cert"}, // unreadable
		{cert, key + ".missing", "key"},
	}
	for _, c := range cases {
		_, err := KeyPair(c.cert, c.key)
		var fe *Error
		if !errors.As(err, &fe) || fe.Attr != c.attr {
			t.Errorf("KeyPair(%s, %s) = %v, want an *Error blaming %q", filepath.Base(c.cert), filepath.Base(c.key), err, c.attr)
		}
	}
}

func TestCertPool(t *testing.T) {
	cert, _, _, text := write(t)
	if _, b, err := CertPool("ca", cert); err != nil || len(b) == 0 {
		t.Fatalf("CertPool(cert) = %d bytes, %v", len(b), err)
	}
	_, _, err := CertPool("client_ca", text)
	var fe *Error
	if !errors.As(err, &fe) || fe.Attr != "client_ca" || !errors.Is(err, ErrNoCertificate) {
		t.Errorf("CertPool(text) = %v", err)
	}
}
