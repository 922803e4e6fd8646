package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sluicehq/sluice/host"
)

func TestProxyConfig(t *testing.T) {
	for _, c := range []struct {
		to, listen string
		ok         bool
	}{
		{"http://127.0.0.1:9000", "127.0.0.1:8080", true},
		{"h2c://127.0.0.1:9000/ignored/path", ":8080", true},
		{"", ":8080", false},
		{"127.0.0.1:9000", ":8080", false},
		{"ftp://x:1", ":8080", false},
		{"http://127.0.0.1:9000", "nope", false},
	} {
		_, err := proxyConfig(c.to, c.listen)
		if (err == nil) != c.ok {
			t.Errorf("proxyConfig(%q, %q): err %v, want ok=%v", c.to, c.listen, err, c.ok)
		}
	}
}

func TestProxyModeForwards(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "backend saw %s %s xff=%s", r.Method, r.URL.RequestURI(), r.Header.Get("X-Forwarded-For"))
	}))
	defer backend.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	cfg, err := proxyConfig(backend.URL, addr)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := host.Start(host.InstanceOptions{Config: cfg, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Shutdown(context.Background())
	resp, err := http.Get("http://" + addr + "/a/b?c=d")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := "backend saw GET /a/b?c=d xff=127.0.0.1"; string(body) != want {
		t.Fatalf("got %q, want %q", body, want)
	}
}
