//go:build !unix

package proxy_test

import (
	"net"
	"testing"
)

// deadURL is an address nothing listens on: a port closed a moment ago.
func deadURL(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}
