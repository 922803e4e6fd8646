package config_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/generation"
)

// TestMarkdownValidate validates every complete ```hcl block of every
// Markdown file as `sluice validate` does, not only parses it: filters
// are compiled and set up with their config, handlers and certificates
// built. A block is tried in its Markdown file's folder (an example's or
// a filter's README names its own files), else in a fixture folder that
// has what the reference names: public/, a real certificate and key, and
// every shipped filter at filters/NAME.wasm and NAME.wasm.
func TestMarkdownValidate(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles every shipped filter")
	}
	root := config.RepoRoot(t)
	fixtures := validateFixtures(t, root)
	for _, k := range []string{"API_KEY", "SLUICE_ADMIN_TOKEN"} {
		t.Setenv(k, "doc-value")
	}
	env := regexp.MustCompile(`env\("([A-Za-z_][A-Za-z0-9_]*)"\)`)
	n := 0
	for _, f := range config.MarkdownFiles(t, root) {
		for _, b := range config.HCLBlocks(t, root, f) {
			if b.Info() != "" {
				continue // a fragment: TestMarkdownHCL checks its syntax
			}
			for _, m := range env.FindAllSubmatch(b.Src(), -1) {
				t.Setenv(string(m[1]), "doc-value")
			}
			src := config.WithSite(b.Src())
			n++
			// In the Markdown file's folder, else in the fixtures: the
			// problems are the fixtures' when both refuse it.
			msg := validateIn(t, filepath.Join(root, filepath.Dir(f)), src)
			if msg != "" {
				msg = validateIn(t, fixtures, src)
			}
			if msg != "" {
				t.Errorf("%s:%d: sluice validate refuses it:\n%s", f, b.Line(), msg)
			}
		}
	}
	if n < 30 {
		t.Errorf("validated %d blocks, want every complete one", n)
	}
	t.Logf("validated %d configs", n)
}

// validateIn writes src as a config file in dir and validates it as
// `sluice validate` would; it returns the problems, or "".
// Modules compile into the runtime's default cache (cache_dir unset), so
// a second run compiles nothing.
func validateIn(t *testing.T, dir string, src []byte) string {
	t.Helper()
	f, err := os.CreateTemp(dir, ".docs-validate-*.hcl")
	if err != nil {
		t.Fatal(err)
	}
	name := f.Name()
	defer os.Remove(name)
	f.Write(src)
	f.Close()
	cfg, files, diags := config.LoadFiles(name)
	if !diags.HasErrors() {
		if err := generation.ValidateFilters(cfg); err != nil {
			return err.Error()
		}
		diags = append(diags, generation.Validate(cfg)...)
	}
	if diags.HasErrors() {
		return config.FormatDiagnostics(diags, files)
	}
	return ""
}

// validateFixtures makes the folder the reference's examples are
// validated in.
func validateFixtures(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, data []byte) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("public/index.html", []byte("<h1>hi</h1>\n"))
	write("public/404.html", []byte("<h1>not found</h1>\n"))
	write("public/assets/app.js", []byte("\n"))
	write("banner.txt", []byte("hello\n"))
	write("logs/.keep", nil)
	cert, key := selfSigned(t)
	write("cert.pem", cert)
	write("key.pem", key)
	mods, _ := filepath.Glob(filepath.Join(root, "filters", "*", "*.wasm"))
	for _, m := range mods {
		data, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		base := filepath.Base(m)
		write(base, data)
		write(filepath.Join("filters", base), data)
		write(filepath.Join("filters", strings.TrimSuffix(base, ".wasm"), base), data)
	}
	return dir
}

func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "example.com"},
		DNSNames: []string{"example.com", "www.example.com", "localhost"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
}
