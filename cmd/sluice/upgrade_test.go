package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHealth: sluice health exits 0 only on a 200 (the image's
// HEALTHCHECK), 1 on another status or no answer.
func TestHealth(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	admin := strings.TrimPrefix(srv.URL, "http://")
	if rc := cmdHealth([]string{"--admin", admin}); rc != 0 {
		t.Errorf("healthy: exit %d", rc)
	}
	status = http.StatusServiceUnavailable
	if rc := cmdHealth([]string{"--admin", admin}); rc != 1 {
		t.Errorf("503: exit %d, want 1", rc)
	}
	if rc := cmdHealth([]string{"--url", srv.URL + "/other"}); rc != 1 {
		t.Errorf("404: exit %d, want 1", rc)
	}
	srv.Close()
	if rc := cmdHealth([]string{"--admin", admin, "--timeout", "1s"}); rc != 1 {
		t.Errorf("no server: exit %d, want 1", rc)
	}
}

// TestUpgradeCommand: sluice upgrade posts to /upgrade (with the token)
// and exits 1 unless the answer is 200.
func TestUpgradeCommand(t *testing.T) {
	var status int
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/upgrade" {
			http.Error(w, "wrong request", http.StatusBadRequest)
			return
		}
		auth = r.Header.Get("Authorization")
		w.WriteHeader(status)
	}))
	defer srv.Close()
	admin := strings.TrimPrefix(srv.URL, "http://")
	for _, c := range []struct{ status, rc int }{{200, 0}, {500, 1}, {409, 1}} {
		status = c.status
		if rc := cmdUpgrade([]string{"--admin", admin, "--token", "s3cret"}); rc != c.rc {
			t.Errorf("answer %d: exit %d, want %d", c.status, rc, c.rc)
		}
		if auth != "Bearer s3cret" {
			t.Errorf("Authorization %q", auth)
		}
	}
	pid := filepath.Join(t.TempDir(), "pid")
	if err := os.WriteFile(pid, []byte("not a pid\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rc := cmdUpgrade([]string{"--pid-file", pid}); rc != 1 {
		t.Errorf("a bad pid file: exit %d, want 1", rc)
	}
}
