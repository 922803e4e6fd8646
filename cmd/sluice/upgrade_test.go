package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/host/admin"
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

// TestPidFileNoFollow: links that another user made ready at the names
// the pid file is written under (the old fixed temporary name, the one
// drawn, the path itself) are not written through: the file they point
// at keeps its content, and the pid file holds the id.
func TestPidFileNoFollow(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sluice.pid")
	drawn := path + ".tmp-drawn"
	for _, name := range []string{
		path + ".tmp" + strconv.Itoa(os.Getpid()), // the name before the fix
		drawn,
		path,
	} {
		if err := os.Symlink(victim, name); err != nil {
			t.Fatal(err)
		}
	}
	names := []string{drawn, path + ".tmp-fresh"}
	old := pidTempName
	pidTempName = func(string) string { n := names[0]; names = names[1:]; return n }
	defer func() { pidTempName = old }()
	p := pidFileT{path: path}
	if err := p.write(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "secret\n" {
		t.Fatalf("the linked file was overwritten: %q", b)
	}
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("pid file: %v %v, want a regular file", fi, err)
	}
	if b, _ := os.ReadFile(path); strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("pid file holds %q", b)
	}
	if _, err := os.Lstat(path + ".tmp-fresh"); !os.IsNotExist(err) {
		t.Fatalf("the temporary was left: %v", err)
	}
}

// TestAdminUnixSocket: reload, upgrade and health reach an admin API on
// a unix socket (--admin unix/PATH), the token included.
func TestAdminUnixSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin.sock")
	var reloads, upgrades atomic.Int32
	s, err := admin.New(admin.Options{
		Listen:  "unix/" + path,
		Token:   "s3cret",
		Reload:  func() error { reloads.Add(1); return nil },
		Upgrade: func() (string, error) { upgrades.Add(1); return "upgraded\n", nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	addr := "unix/" + path
	tests := []struct {
		name string
		run  func() int
		rc   int
	}{
		{"reload", func() int { return cmdReload([]string{"--admin", addr, "--token", "s3cret"}) }, 0},
		{"reload without the token", func() int { return cmdReload([]string{"--admin", addr, "--token", ""}) }, 1},
		{"upgrade", func() int { return cmdUpgrade([]string{"--admin", addr, "--token", "s3cret"}) }, 0},
		{"health", func() int { return cmdHealth([]string{"--admin", addr}) }, 0},
		{"health of no socket", func() int { return cmdHealth([]string{"--admin", addr + ".none"}) }, 1},
	}
	for _, tt := range tests {
		if rc := tt.run(); rc != tt.rc {
			t.Errorf("%s: exit %d, want %d", tt.name, rc, tt.rc)
		}
	}
	if reloads.Load() != 1 || upgrades.Load() != 1 {
		t.Errorf("%d reloads, %d upgrades; want one each", reloads.Load(), upgrades.Load())
	}
}

// TestAdminFromConfig: reload and upgrade with -c FILE find the admin
// address (a wildcard host is dialed on loopback) and the token in the
// config; --token still wins; a config without an admin block is an
// error, not a request to the default address.
func TestAdminFromConfig(t *testing.T) {
	dir := t.TempDir()
	var reloads, upgrades atomic.Int32
	serve := func(listen string) *admin.Server {
		s, err := admin.New(admin.Options{
			Listen:  listen,
			Token:   "t0k",
			Reload:  func() error { reloads.Add(1); return nil },
			Upgrade: func() (string, error) { upgrades.Add(1); return "upgraded\n", nil },
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	writeConfig := func(name, adminBlock string) string {
		path := filepath.Join(dir, name)
		src := adminBlock + "\nsite \"*\" {\n  route \"/\" {\n    respond {}\n  }\n}\n"
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	sock := filepath.Join(dir, "admin.sock")
	serve("unix/" + sock)
	tcp := serve("127.0.0.1:0")
	_, port, _ := net.SplitHostPort(tcp.Addr().String())
	unixCfg := writeConfig("unix.hcl", fmt.Sprintf("admin {\n  listen = \"unix/%s\"\n  token  = \"t0k\"\n}\n", sock))
	tcpCfg := writeConfig("tcp.hcl", fmt.Sprintf("admin {\n  listen = \"0.0.0.0:%s\"\n  token  = \"t0k\"\n}\n", port))
	noAdmin := writeConfig("none.hcl", "")
	tests := []struct {
		name string
		run  func() int
		rc   int
	}{
		{"reload -c, unix", func() int { return cmdReload([]string{"-c", unixCfg}) }, 0},
		{"upgrade -c, unix", func() int { return cmdUpgrade([]string{"-c", unixCfg}) }, 0},
		{"reload --config, a wildcard TCP address", func() int { return cmdReload([]string{"--config", tcpCfg}) }, 0},
		{"reload -c with a wrong --token", func() int { return cmdReload([]string{"-c", unixCfg, "--token", "nope"}) }, 1},
		{"reload -c, no admin block", func() int { return cmdReload([]string{"-c", noAdmin}) }, 1},
		{"reload -c, no file", func() int { return cmdReload([]string{"-c", filepath.Join(dir, "missing.hcl")}) }, 1},
	}
	for _, tt := range tests {
		if rc := tt.run(); rc != tt.rc {
			t.Errorf("%s: exit %d, want %d", tt.name, rc, tt.rc)
		}
	}
	if reloads.Load() != 2 || upgrades.Load() != 1 {
		t.Errorf("%d reloads, %d upgrades; want 2 and 1", reloads.Load(), upgrades.Load())
	}
}
