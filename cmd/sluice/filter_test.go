package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

func TestFilterRun(t *testing.T) {
	// Share compiled modules across runs: the Go guests take seconds.
	t.Setenv("XDG_CACHE_HOME", filepath.Join(os.TempDir(), "sluice-test-wasm-cache", "cli"))
	hash, _ := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	reqFile := filepath.Join(t.TempDir(), "req.http")
	os.WriteFile(reqFile, []byte("POST /api/users/7?x=1 HTTP/1.1\nHost: example.com\nContent-Type: text/plain\n\nhello"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"keyauth continued", []string{"../../filters/keyauth/keyauth.wasm", "--config", `{"keys": {"alice": "k1"}}`, "--url", "http://example.com/a?b=1", "--header", "X-API-Key: k1"},
			0, []string{"result   continued", "GET /a?b=1 HTTP/1.1", "Host: example.com", "X-Consumer: alice", "handle_response"}},
		{"keyauth answered", []string{"../../filters/keyauth/keyauth.wasm", "--config", `{"keys": ["k1"]}`},
			0, []string{"result   answered", "401 Unauthorized", "no API key"}},
		{"keyauth bad config", []string{"../../filters/keyauth/keyauth.wasm", "--config", `{}`},
			1, []string{"filter setup: keys is required"}},
		{"basicauth", []string{"../../filters/basicauth/basicauth.wasm", "--config", `{"users": {"bob": "` + string(hash) + `"}}`,
			"--header", "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("bob:pw"))},
			0, []string{"result   continued", "X-Consumer: bob"}},
		{"jwt", []string{"../../filters/jwt/jwt.wasm", "--config", `{"keys": [{"secret": "s"}]}`},
			0, []string{"result   answered", "WWW-Authenticate: Bearer"}},
		{"headers", []string{"../../filters/headers/headers.wasm", "--config", `{"request": {"set": {"X-A": "1"}}, "response": {"set": {"X-B": "2"}}}`},
			0, []string{"X-A: 1", "X-B: 2", "features buffer_response"}},
		{"rewrite from a file", []string{"--request", reqFile, "../../filters/rewrite/rewrite.wasm", "--config", `{"rules": [{"match": "^/api/users/([0-9]+)$", "replace": "/people/$1"}]}`},
			0, []string{"POST /people/7?x=1 HTTP/1.1", "Content-Type: text/plain", "hello"}},
		{"cors preflight", []string{"../../filters/cors/cors.wasm", "--config", `{"allowed_origins": ["*"]}`, "--method", "OPTIONS",
			"--header", "Origin: https://a.example", "--header", "Access-Control-Request-Method: PUT"},
			0, []string{"result   answered", "204 No Content", "Access-Control-Allow-Origin: *"}},
		{"no module", []string{}, 2, nil},
		{"bad header flag", []string{"../../filters/cors/cors.wasm", "--header", "nocolon"}, 1, []string{"want 'Name: value'"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := runFilterCmd(append([]string{"run"}, tc.args...), &out, &errOut)
			all := out.String() + errOut.String()
			if len(tc.args) == 0 {
				code = runFilterCmd(nil, &out, &errOut)
			}
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, all)
			}
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
		})
	}
}

// TestFilterRunRustPanic: a Rust filter built with names (the SDK
// README's debug build) panics: the output gives the panic's message and
// location and a stack of demangled function names, and no advice to set
// RUST_BACKTRACE (a filter cannot).
func TestFilterRunRustPanic(t *testing.T) {
	var out, errOut bytes.Buffer
	code := runFilterCmd([]string{"run", "testdata/rustpanic/filter.wasm", "--url", "/panic"}, &out, &errOut)
	all := out.String() + errOut.String()
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, all)
	}
	for _, w := range []string{
		`panic: no token configured (at filter.rs:12:11)`,
		"\t.filter::check_token(i32,i32)\n",
		"\t.<filter::Panics as sluice::Filter>::handle_request(i32,i32,i32) i32\n",
	} {
		if !strings.Contains(all, w) {
			t.Errorf("output lacks %q:\n%s", w, all)
		}
	}
	if strings.Contains(all, "RUST_BACKTRACE") {
		t.Errorf("output suggests RUST_BACKTRACE:\n%s", all)
	}
}
