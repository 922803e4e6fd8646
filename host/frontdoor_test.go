package host

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/tlsconf/tlstest"
)

// rawExchange sends raw request bytes on a fresh connection to addr and
// reads one response; status 0 means the connection ended without one.
func rawExchange(t *testing.T, addr, req string) (int, string, http.Header) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		return 0, "", nil
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "", nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// The door's own cases (versions, authority, Host, client address,
// syntax) are host/frontdoor's tests, through every engine; this file
// keeps the end-to-end one, over TLS with the listener and a generation,
// and those of the listener's shims (lingering close, header timeouts).

// TestFrontDoorMTLSAbsoluteForm is the reviewed bypass: a client without
// a certificate, on a connection made for the open site, names the site
// that requires one in the request line or in Host. It never gets that
// site: the authority decides the site once, and its TLS policy is the
// one checked.
func TestFrontDoorMTLSAbsoluteForm(t *testing.T) {
	e := newTLSEnv(t, tlstest.Kinds[0])
	clients := tlstest.NewCA(t, tlstest.Kinds[0])
	caFile := filepath.Join(e.dir, "clients.pem")
	os.WriteFile(caFile, clients.PEM, 0o600)
	addr := tlsFreeAddr(t)
	open := e.site(t, "public.test", addr)
	secure := e.site(t, "secure.test", addr)
	secure.TLS.ClientAuth, secure.TLS.ClientCA = "require", caFile
	tlsStart(t, &config.Config{Sites: []*config.Site{open, secure}, Listeners: []*config.Listener{tlsListenerFor(addr, true, open, secure)}})
	send := func(req string) (int, string) {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
			&tls.Config{ServerName: "public.test", RootCAs: e.ca.Pool(), NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, req)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%q: %v", req, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		req    string
		status int
	}{
		// The reported attack: the request line names the open site, Host
		// the secure one. The open site answers.
		{"GET https://public.test/ HTTP/1.1\r\nHost: secure.test\r\n\r\n", 200},
		// The other way round: the request line names the secure site.
		{"GET https://secure.test/ HTTP/1.1\r\nHost: public.test\r\n\r\n", 421},
		{"GET / HTTP/1.1\r\nHost: secure.test\r\n\r\n", 421},
		{"GET / HTTP/1.1\r\nHost: SECURE.test.:443\r\n\r\n", 421},
	} {
		status, body := send(c.req)
		if status != c.status || strings.Contains(body, "host=secure.test") {
			t.Errorf("%q: %d %q, want %d and never secure.test's content", c.req, status, body, c.status)
		}
		if status == 200 && !strings.Contains(body, "host=public.test") {
			t.Errorf("%q: served %q, want public.test", c.req, body)
		}
	}
}

// TestFrontDoorLingeringClose: a body refused for its size is answered
// 413 and the client, still sending, reads that answer rather than a
// connection reset.
func TestFrontDoorLingeringClose(t *testing.T) {
	base := startConfig(t, `
listener "127.0.0.1:PORT" {
  max_request_body = "1KiB"
}
site "a.test" {
  listen = ["127.0.0.1:PORT"]
  route "/" {
    respond {
      status = 200
      body   = "ok"
    }
  }
}
`).URL
	addr := strings.TrimPrefix(base, "http://")
	for i := range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 4194304\r\n\r\n")
		sent := make(chan struct{})
		go func() { // 1 MiB of the body, as a client that does not wait would
			defer close(sent)
			chunk := make([]byte, 64<<10)
			for range 16 {
				if _, err := c.Write(chunk); err != nil {
					return
				}
			}
		}()
		<-sent
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("try %d: reading the answer: %v, want 413", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 413 || !resp.Close {
			t.Fatalf("try %d: %d close=%v, want 413 and Connection: close", i, resp.StatusCode, resp.Close)
		}
		// The server lingers: it still takes what the client sends
		// instead of resetting the connection (which, on a slower link,
		// destroys an answer not yet delivered).
		time.Sleep(100 * time.Millisecond)
		chunk := make([]byte, 64<<10)
		for j := range 8 {
			if _, err := c.Write(chunk); err != nil {
				t.Fatalf("try %d: write %d after the answer: %v; want the server to linger", i, j, err)
			}
		}
		c.Close()
	}
}

// TestFrontDoorHeaderTimeout: read_header_timeout holds on the fasthttp
// engine: a client trickling its head is cut off then, not at
// read_timeout; and a slow body still has read_timeout.
func TestFrontDoorHeaderTimeout(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s", b)
	}))
	defer backend.Close()
	base := startConfig(t, `
listener "127.0.0.1:PORT" {
  read_header_timeout = "300ms"
  read_timeout        = "20s"
}
site "a.test" {
  listen = ["127.0.0.1:PORT"]
  route "/" {
    proxy {
      upstreams = ["`+backend.URL+`"]
    }
  }
}
`).URL
	addr := strings.TrimPrefix(base, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a.test\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	io.Copy(io.Discard, c) // until the server ends the connection
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("a partial head was kept open %v; read_header_timeout is 300ms", d)
	}
	// The body of a request whose head arrived in time may take longer
	// than read_header_timeout.
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c2, "POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 4\r\n\r\nab")
	time.Sleep(600 * time.Millisecond)
	io.WriteString(c2, "cd")
	resp, err := http.ReadResponse(bufio.NewReader(c2), nil)
	if err != nil {
		t.Fatalf("slow body within read_timeout: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "abcd" {
		t.Fatalf("slow body within read_timeout: %d %q", resp.StatusCode, b)
	}
}

// TestFrontDoorHeaderTimeoutH2: over TLS, an HTTP/2 connection that sends
// no preface, or a preface and no request, is closed at
// read_header_timeout, not after net/http's fixed 10 s or never; one
// that sends requests is served.
func TestFrontDoorHeaderTimeoutH2(t *testing.T) {
	e := newTLSEnv(t, tlstest.Kinds[0])
	addr := tlsFreeAddr(t)
	site := e.site(t, "a.test", addr)
	l := tlsListenerFor(addr, true, site)
	l.ReadHeaderTimeout = 300 * time.Millisecond
	tlsStart(t, &config.Config{Sites: []*config.Site{site}, Listeners: []*config.Listener{l}})
	for _, send := range []string{"", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"} {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
			&tls.Config{ServerName: "a.test", RootCAs: e.ca.Pool(), NextProtos: []string{"h2"}})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		io.WriteString(c, send)
		c.SetReadDeadline(time.Now().Add(8 * time.Second))
		io.Copy(io.Discard, c)
		c.Close()
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("h2 connection sending %q kept open %v; read_header_timeout is 300ms", send, d)
		}
	}
	_, body := tlsGet(t, e.client(t, "h2", nil), "https://a.test:"+tlsPortOf(addr)+"/")
	if !strings.Contains(body, "proto=HTTP/2.0") {
		t.Errorf("h2 request: %q", body)
	}
}
