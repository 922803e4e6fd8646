// Package exampletest boots an example's sluice.hcl for its test and
// sends it requests. It is test support for examples/, nothing else.
package exampletest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host"
)

// Client sends requests as written: no automatic Accept-Encoding, no
// redirects followed.
var Client = &http.Client{
	Transport:     &http.Transport{DisableCompression: true},
	Timeout:       5 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// Do sends one request with Client and returns the response and its body.
func Do(t testing.TB, method, url string, h http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// Boot starts the sluice.hcl of the current folder with every quoted
// string that is a key of replace (an address, an upstream URL) replaced
// by its value, and stops it when t ends. The config is copied to a
// temporary folder with its relative module and root paths made
// absolute, so nothing is written beside the example.
func Boot(t testing.TB, replace map[string]string) {
	t.Helper()
	src, err := os.ReadFile("sluice.hcl")
	if err != nil {
		t.Fatal(err)
	}
	hcl := string(src)
	for from, to := range replace {
		hcl = strings.ReplaceAll(hcl, `"`+from+`"`, `"`+to+`"`)
	}
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	hcl = relPath.ReplaceAllStringFunc(hcl, func(m string) string {
		sub := relPath.FindStringSubmatch(m)
		return sub[1] + filepath.ToSlash(filepath.Join(dir, sub[2])) + `"`
	})
	path := filepath.Join(t.TempDir(), "sluice.hcl")
	if err := os.WriteFile(path, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	inst, err := host.Start(host.InstanceOptions{Path: path, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		inst.Shutdown(ctx)
	})
}

// relPath matches a relative module or root path in a config.
var relPath = regexp.MustCompile(`(?m)^(\s*(?:module|root)\s*=\s*")([^"/][^"]*)"`)

// FreeAddr returns a loopback address with a port free a moment ago (the
// config refuses port 0).
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
