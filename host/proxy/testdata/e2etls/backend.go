// Command backend is the upstream of the end-to-end TLS proxy benchmark
// (run.sh beside it): a keep-alive HTTPS server answering 200 "Hello,
// World!". With -gen DIR it writes a self-signed ECDSA P-256 certificate
// for 127.0.0.1 and localhost (cert.pem, key.pem) and exits.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:19443", "listen address")
	dir := flag.String("dir", ".", "folder of cert.pem and key.pem")
	gen := flag.Bool("gen", false, "write cert.pem and key.pem into -dir and exit")
	flag.Parse()
	cert, key := filepath.Join(*dir, "cert.pem"), filepath.Join(*dir, "key.pem")
	if *gen {
		if err := generate(cert, key); err != nil {
			log.Fatal(err)
		}
		return
	}
	body := []byte("Hello, World!")
	srv := &http.Server{Addr: *addr, ErrorLog: log.New(os.Stderr, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(body)
	})}
	log.Fatal(srv.ListenAndServeTLS(cert, key))
}

func generate(certFile, keyFile string) error {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		return err
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	return os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
}
