package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func cmdUpgrade(args []string) int {
	fs := newFlags("upgrade", "[-c FILE.hcl | --admin ADDR] [--token TOKEN] [--pid PID | --pid-file FILE]", `Replace a running server's binary without refusing a connection (as
nginx on SIGUSR2): it starts the binary at its path again (replace the
file first), hands it the listening sockets, waits until it serves, then
drains; long-lived connections run on the old process until its
server.shutdown_timeout. A new binary that fails to start, or is not
ready in time, is stopped and the old one keeps serving.
By default through the admin API (POST /upgrade), which waits for the
outcome and reports it; with --pid or --pid-file it sends SIGUSR2, and
the outcome is in the server's log. With -c, the admin address and token
are the config's.`)
	a := newAdminFlags(fs)
	pid := fs.Int("pid", 0, "signal this process `id` instead of using the admin API")
	pidPath := fs.String("pid-file", "", "signal the process whose id is in `file` (serve --pid-file)")
	if rc := parse(fs, args); rc >= 0 {
		return rc
	}
	if *pidPath != "" {
		b, err := os.ReadFile(*pidPath)
		if err == nil {
			*pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "sluice upgrade:", err)
			return 1
		}
	}
	if *pid > 0 {
		if err := syscall.Kill(*pid, syscall.SIGUSR2); err != nil {
			fmt.Fprintf(os.Stderr, "sluice upgrade: pid %d: %v\n", *pid, err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "sent SIGUSR2 to pid %d; its log tells the outcome\n", *pid)
		return 0
	}
	if err := a.resolve(); err != nil {
		fmt.Fprintln(os.Stderr, "sluice upgrade:", err)
		return 1
	}
	// The server waits for the new process (host.DefaultUpgradeTimeout).
	return adminPost("upgrade", *a.addr, *a.token, "/upgrade", 90*time.Second)
}

func cmdHealth(args []string) int {
	fs := newFlags("health", "[--admin ADDR | --url URL]", `Exit 0 when a running server answers its admin /healthz (or URL) with
200, else 1: a health check for images without curl (HEALTHCHECK).`)
	admin := fs.String("admin", "127.0.0.1:2019", "admin listener `address` (host:port, or unix/PATH for a unix socket)")
	url := fs.String("url", "", "check this `URL` instead of the admin /healthz")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after `duration`")
	if rc := parse(fs, args); rc >= 0 {
		return rc
	}
	what, status := *url, 0
	var err error
	if *url == "" {
		what = *admin + " /healthz"
		status, _, err = adminCall(*admin, "", http.MethodGet, "/healthz", *timeout)
	} else {
		var resp *http.Response
		if resp, err = (&http.Client{Timeout: *timeout}).Get(*url); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			status = resp.StatusCode
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sluice health:", err)
		return 1
	}
	if status != http.StatusOK {
		fmt.Fprintf(os.Stderr, "sluice health: %s: %d %s\n", what, status, http.StatusText(status))
		return 1
	}
	return 0
}

// pidFile is serve --pid-file: written once the process serves (by the
// new process after an upgrade, atomically), removed at exit unless a
// successor took over.
var pidFile pidFileT

type pidFileT struct {
	path string
	keep bool
}

func (p *pidFileT) write() error {
	if p.path == "" {
		return nil
	}
	// The file is written beside its path under a name no one else can
	// have made ready (random, and refused if it exists: O_EXCL), never
	// through a link (O_NOFOLLOW), then renamed over the path, which
	// replaces a link rather than writing through it. A pid file in a
	// directory others may write to must not let them point root's
	// write at a file of their choice.
	var f *os.File
	var err error
	for range 3 {
		f, err = os.OpenFile(pidTempName(p.path), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
		if !errors.Is(err, os.ErrExist) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("pid file: %w", err)
	}
	tmp := f.Name()
	_, err = f.WriteString(strconv.Itoa(os.Getpid()) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p.path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("pid file: %w", err)
	}
	return nil
}

// pidTempName is the name the pid file is written under before it is
// renamed: beside it, with 64 random bits (a test replaces it).
var pidTempName = func(path string) string {
	var b [8]byte
	rand.Read(b[:])
	return path + ".tmp-" + hex.EncodeToString(b[:])
}

// handedOver keeps the file: the new process has written its own id.
func (p *pidFileT) handedOver() { p.keep = true }

func (p *pidFileT) remove() {
	if p.path == "" || p.keep {
		return
	}
	if b, err := os.ReadFile(p.path); err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(os.Getpid()) {
		_ = os.Remove(p.path)
	}
}
