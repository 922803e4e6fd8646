// Package pemfile loads the PEM files a config names (a certificate and
// its key, a CA bundle) and, when one cannot be used, says which config
// attribute is at fault, so that `sluice validate` and serve point at it.
// host/tlsconf (site certificates, client CAs), host/proxy (upstream CA,
// client certificate) and host/store (the same, toward Redis: Client)
// load through it.
//
// Where it sits on the request path: nowhere; files are loaded when a
// generation is built, and when tlsconf reloads a changed certificate. It
// imports only the standard library.
package pemfile

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// Error is a file that cannot be used. Attr names it as the config does
// ("cert", "key", "ca", "client_ca").
type Error struct {
	Attr, Path string
	Err        error
}

func (e *Error) Error() string { return fmt.Sprintf("%s %q: %v", e.Attr, e.Path, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// ErrNoCertificate: the file holds no PEM certificate.
var ErrNoCertificate = errors.New("no PEM certificate found")

// KeyPair loads a certificate (attribute "cert") and its key ("key"),
// blaming the file at fault: the certificate when it is unreadable or
// holds no PEM certificate, else the key (unreadable, unparsable, or not
// the certificate's).
func KeyPair(certFile, keyFile string) (tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, &Error{Attr: "cert", Path: certFile, Err: err}
	}
	if !hasCertificate(certPEM) {
		return tls.Certificate{}, &Error{Attr: "cert", Path: certFile, Err: ErrNoCertificate}
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return tls.Certificate{}, &Error{Attr: "key", Path: keyFile, Err: err}
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, &Error{Attr: "key", Path: keyFile, Err: err}
	}
	return c, nil
}

// CertPool loads a bundle of CA certificates named by the attribute attr.
// It returns the file's bytes too (tlsconf hashes them).
func CertPool(attr, path string) (*x509.CertPool, []byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, &Error{Attr: attr, Path: path, Err: err}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, nil, &Error{Attr: attr, Path: path, Err: ErrNoCertificate}
	}
	return pool, b, nil
}

func hasCertificate(b []byte) bool {
	for {
		var blk *pem.Block
		if blk, b = pem.Decode(b); blk == nil {
			return false
		}
		if blk.Type == "CERTIFICATE" {
			return true
		}
	}
}

// Client is the TLS configuration of a connection sluice makes (to a
// proxy's upstream, to the store): TLS 1.2 at least, the roots of the CA
// bundle caFile when set (else the system's), and the client certificate
// certFile and keyFile when set. The caller adds the server name and
// what else is its own.
func Client(caFile, certFile, keyFile string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, _, err := CertPool("ca", caFile)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		c.RootCAs = pool
	}
	if certFile != "" || keyFile != "" {
		cert, err := KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
