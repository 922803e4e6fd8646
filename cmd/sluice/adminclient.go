package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"time"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/admin"
)

// adminFlags are the flags of a command that talks to a running server's
// admin API: its address and token, or the config to read them from (as
// Caddy's reload --config finds its admin address).
type adminFlags struct {
	fs                *flag.FlagSet
	addr, token, file *string
}

func newAdminFlags(fs *flag.FlagSet) *adminFlags {
	a := &adminFlags{fs: fs}
	a.addr = fs.String("admin", admin.DefaultListen, "admin listener `address` (host:port, or unix/PATH for a unix socket); default the config's with -c")
	a.token = fs.String("token", os.Getenv("SLUICE_ADMIN_TOKEN"), "admin bearer `token` (default $SLUICE_ADMIN_TOKEN, or the config's with -c)")
	a.file = fs.String("c", "", "read the admin address and token from this config `file`")
	fs.StringVar(a.file, "config", "", "config `file` (same as -c)")
	return a
}

// resolve fills the address and token from the config file when one was
// given; --admin and --token, when set, still win.
func (a *adminFlags) resolve() error {
	if *a.file == "" {
		return nil
	}
	cfg, files, diags := config.LoadFiles(*a.file)
	if diags.HasErrors() {
		return fmt.Errorf("config %s:\n%s", *a.file, config.FormatDiagnostics(diags, files))
	}
	if cfg.Admin == nil {
		return fmt.Errorf("config %s has no admin block: the server it runs has no admin API", *a.file)
	}
	set := map[string]bool{}
	a.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["admin"] {
		*a.addr = dialable(cfg.Admin.Listen)
	}
	if !set["token"] && cfg.Admin.Token != "" {
		*a.token = cfg.Admin.Token
	}
	return nil
}

// dialable turns a listen address into one to dial: a wildcard or empty
// host is reached on loopback.
func dialable(listen string) string {
	if _, ok := admin.UnixPath(listen); ok {
		return listen
	}
	h, p, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip, err := netip.ParseAddr(h); h == "" || err == nil && ip.IsUnspecified() {
		if err == nil && ip.Is6() {
			return net.JoinHostPort("::1", p)
		}
		return net.JoinHostPort("127.0.0.1", p)
	}
	return listen
}

// adminCall sends method path to the admin API at addr, "host:port" or
// "unix/PATH" (a unix socket, as the config's admin listen writes it),
// with the bearer token when there is one, and returns the status and
// up to 1 MiB of the body.
func adminCall(addr, token, method, path string, timeout time.Duration) (int, []byte, error) {
	client := &http.Client{Timeout: timeout}
	url := "http://" + addr + path
	if sock, ok := admin.UnixPath(addr); ok {
		// The Host is a loopback name, which the admin API accepts.
		url = "http://localhost" + path
		client.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}
	}
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, body, err
}

// adminPost is a command's POST to the admin API: the body on stderr,
// exit 0 on 200, 1 otherwise.
func adminPost(cmd, addr, token, path string, timeout time.Duration) int {
	status, body, err := adminCall(addr, token, http.MethodPost, path, timeout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sluice %s: %v\n", cmd, err)
		return 1
	}
	if status != http.StatusOK {
		fmt.Fprintf(os.Stderr, "sluice %s: %d %s\n%s", cmd, status, http.StatusText(status), body)
		return 1
	}
	fmt.Fprintf(os.Stderr, "%s", body)
	return 0
}
