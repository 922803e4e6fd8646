//go:build unix

package proxy_test

import (
	"fmt"
	"syscall"
	"testing"
)

// deadURL is an address nothing listens on, for as long as the test
// runs: a TCP port bound but never listened on, so connections to it are
// refused and no other test (in this process or another) can take the
// port in the meantime, as it could a port merely closed.
func deadURL(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("http://127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
}
