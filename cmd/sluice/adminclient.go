package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/sluicehq/sluice/host/admin"
)

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
