package host

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
)

// pathUpstream is a raw HTTP/1.1 upstream that records every request
// target it gets, as sent, whatever it holds (net/http would refuse some
// before a handler saw them).
type pathUpstream struct {
	ln   net.Listener
	mu   sync.Mutex
	got  []string
	done sync.WaitGroup
}

func startPathUpstream(t *testing.T) *pathUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &pathUpstream{ln: ln}
	u.done.Add(1)
	go func() {
		defer u.done.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go u.serve(c)
		}
	}()
	t.Cleanup(func() { ln.Close(); u.done.Wait() })
	return u
}

func (u *pathUpstream) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		for { // headers; the test sends no bodies
			h, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if h == "\r\n" {
				break
			}
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			return
		}
		u.mu.Lock()
		u.got = append(u.got, f[1])
		u.mu.Unlock()
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecret")
	}
}

// take returns what was recorded since the last call.
func (u *pathUpstream) take() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	got := u.got
	u.got = nil
	return got
}

// TestRouteBoundary: "/papi/" is closed to the test's client by its allow
// list, "/api/" is open, and both proxy to one upstream. No request
// target, however it is escaped or dotted, gets past the allow list or
// makes the upstream see a path of another route: it is refused with 400,
// routed (and denied) where its canonical path says, or forwarded with a
// path of the route it was allowed on. Run through every engine, and
// through the configured listener.
func TestRouteBoundary(t *testing.T) {
	up := startPathUpstream(t)
	upURL := "http://" + up.ln.Addr().String()
	srv := startConfig(t, `
site "a.test" {
  listen = ["127.0.0.1:PORT"]
  route "/" {
    static { root = "./public" }
  }
  route "/api/" {
    proxy { upstreams = ["`+upURL+`"] }
  }
  route "/s/" {
    proxy {
      upstreams    = ["`+upURL+`"]
      strip_prefix = "/s"
    }
  }
  route "/papi/" {
    allow = ["10.9.9.9"]
    proxy { upstreams = ["`+upURL+`"] }
  }
}
`)
	addr := strings.TrimPrefix(srv.URL, "http://")
	refused := []string{ // 400, or 403 from "/papi/"; the upstream sees nothing
		"/papi/secret.txt#/../../api/x",
		"/api/%2e%2e/papi/%zz/../secret.txt",
		"/api/%2e%2e/papi/secret.txt",
		"/api/%2E%2E/papi/secret.txt",
		"/api/.%2e/papi/secret.txt",
		"/api/..%2fpapi/secret.txt",
		"/api/..%2Fpapi/secret.txt",
		"/api/..%5cpapi/secret.txt",
		`/api/..\papi/secret.txt`,
		"/api/%2e%2e%2fpapi/secret.txt",
		"/api/x/%2e%2e%2f%2e%2e%2fpapi/secret.txt",
		"/api/x%2f..%2f..%2fpapi/secret.txt",
		"/api/%c0%ae%c0%ae/papi/secret.txt",
		"/api/%c0%af../papi/secret.txt",
		"/api/%e0%80%ae%e0%80%ae/papi/secret.txt",
		"/api/..;/papi/secret.txt",
		"/api/../papi/secret.txt",
		"/api/./../papi/secret.txt",
		"//papi/secret.txt",
		"/./papi/secret.txt",
		"/papi%2fsecret.txt",
		"/%70api/secret.txt",
		"/s/../papi/secret.txt",
		"/api/a%00b",
		"/api/a%zz",
	}
	forwarded := []struct{ target, upstream string }{
		{"/api/x", "/api/x"},
		{"/api/x?q=/../papi", "/api/x?q=/../papi"},
		{"/api/projects/a%2Fb", "/api/projects/a%2Fb"}, // cannot leave "/api/": as sent
		{"/api/projects/a%2Fb?x=1", "/api/projects/a%2Fb?x=1"},
		{"/api//x/./y", "/api/x/y"},
		{"/api/x/../y", "/api/y"},
		{"/api/x%2F..%2Fy", "/api/y"},
		{"/api/a%20b", "/api/a%20b"},
		{"/api/%61", "/api/%61"},
		{"/%61pi/x", "/api/x"}, // matched as "/api/x": sent so
		{"/api%2fx", "/api/x"},
		{"/s/projects/a%2Fb", "/projects/a%2Fb"},
		{"/s/x/../y", "/y"},
		{"/s/x/%2e%2e/y?z", "/y?z"},
	}
	static := []struct { // served by "/" from the canonical path, inside its root
		target string
		status int
	}{
		{"/index.html", 200},
		{"/%69ndex.html", 200},
		{"/x/..%2findex.html", 200},
		{"/x%2F..%2Findex.html", 200},
		{`/x\..\index.html`, 200},
		{"/%2e%2e/sluice.hcl", 404}, // the config, beside the root
		{"/..%5csluice.hcl", 404},
		{"/x/%2e%2e/%2e%2e/sluice.hcl", 404},
	}
	type target struct {
		name string
		do   func(t *testing.T, path string) (int, error)
	}
	h1 := func(addr string) func(t *testing.T, path string) (int, error) {
		return func(t *testing.T, path string) (int, error) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return 0, err
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n", path)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return 0, err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode, nil
		}
	}
	targets := []target{{"listener", h1(addr)}}
	for _, e := range exchangetest.Engines(t, srv.Inst.Server().dispatchAt(addr)) {
		if e.Proto == "HTTP/1.1" {
			targets = append(targets, target{e.Name, h1(e.Addr())})
			continue
		}
		targets = append(targets, target{e.Name, func(t *testing.T, path string) (int, error) {
			// net/http's HTTP/2 server and quic-go's HTTP/3 server reset
			// a stream whose :path they cannot parse, and the client may
			// try again: bound the wait.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, "GET", e.URL, nil)
			if err != nil {
				return 0, err
			}
			p, q, _ := strings.Cut(path, "?")
			req.URL.Opaque, req.URL.RawQuery = p, q // sent as the :path, as is
			if strings.HasPrefix(p, "//") {
				req.URL.Opaque, req.URL.Path = "", p // an Opaque "//x" would name a host
			}
			req.Host = "a.test"
			resp, err := e.Client.Do(req)
			if err != nil {
				return 0, err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode, nil
		}})
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			up.take()
			for _, p := range refused {
				status, err := tg.do(t, p)
				if err != nil {
					t.Logf("%s: %v", p, err) // refused before a response: fine
				} else if status != 400 && status != 403 {
					t.Errorf("%s: status %d, want 400 or 403", p, status)
				}
				if got := up.take(); len(got) > 0 {
					t.Errorf("%s: the upstream got %q", p, got)
				}
			}
			for _, c := range static {
				if status, err := tg.do(t, c.target); err != nil || status != c.status {
					t.Errorf("%s: %d, %v; want %d", c.target, status, err, c.status)
				}
				if got := up.take(); len(got) > 0 {
					t.Errorf("%s: the upstream got %q", c.target, got)
				}
			}
			for _, c := range forwarded {
				status, err := tg.do(t, c.target)
				if err != nil || status != 200 {
					t.Errorf("%s: %d, %v; want 200", c.target, status, err)
				}
				if got := up.take(); len(got) != 1 || got[0] != c.upstream {
					t.Errorf("%s: the upstream got %q, want %q", c.target, got, c.upstream)
				}
			}
		})
	}
}

// dispatchAt returns the dispatch of a configured listener, to run it
// behind the test engines of exchangetest.
func (s *Server) dispatchAt(addr string) exchange.Handler {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listeners[addr].Handler()
}
