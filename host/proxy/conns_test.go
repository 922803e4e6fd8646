package proxy_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/proxy"
)

// countingBackend tracks the connections open to it and the most open at
// once.
func countingBackend(t *testing.T, delay time.Duration) (*httptest.Server, *atomic.Int64, *atomic.Int64) {
	var open, peak atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		io.WriteString(w, "ok")
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			n := open.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &open, &peak
}

func parallelGets(t *testing.T, e exchangetest.Engine, n int) {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := e.Client.Get(e.URL + "/")
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("status %d", resp.StatusCode)
			}
		}()
	}
	wg.Wait()
}

func TestMaxConns(t *testing.T) {
	be, _, peak := countingBackend(t, 30*time.Millisecond)
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: be.URL}}, MaxConns: 2})
	e := exchangetest.Engines(t, p)[0]
	parallelGets(t, e, 8)
	if peak.Load() > 2 {
		t.Errorf("%d connections at once, MaxConns 2", peak.Load())
	}
}

func TestMaxIdleConns(t *testing.T) {
	be, open, peak := countingBackend(t, 30*time.Millisecond)
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: be.URL}}, MaxIdleConns: 1})
	e := exchangetest.Engines(t, p)[0]
	parallelGets(t, e, 6)
	if peak.Load() < 3 {
		t.Skipf("only %d connections opened; nothing to trim", peak.Load())
	}
	if !within(t, 2*time.Second, func() bool { return open.Load() <= 1 }) {
		t.Errorf("%d connections still open, MaxIdleConns 1", open.Load())
	}
}

func TestIdleTimeoutClosesConns(t *testing.T) {
	be, open, _ := countingBackend(t, 0)
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: be.URL}}, IdleTimeout: 100 * time.Millisecond})
	e := exchangetest.Engines(t, p)[0]
	get(t, e, "/")
	if !within(t, 3*time.Second, func() bool { return open.Load() == 0 }) {
		t.Errorf("%d idle connections outlived IdleTimeout", open.Load())
	}
}

func TestHTTP2OverTLS(t *testing.T) {
	pk := newPKI(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "Grpc-Status")
		fmt.Fprintf(w, "%s %s", r.Proto, r.Host)
		w.Header().Set("Grpc-Status", "0")
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.EnableHTTP2 = true
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pk.issue(t, "backend", []string{"backend.test"}, x509.ExtKeyUsageServerAuth)}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: srv.URL}}, HTTP2: true,
		TLS: &proxy.TLSOptions{CA: pk.caFile, ServerName: "backend.test"}})
	engines(t, p, func(t *testing.T, e exchangetest.Engine) {
		resp, body := get(t, e, "/")
		if resp.StatusCode != 200 || body != "HTTP/2.0 "+strings.TrimPrefix(srv.URL, "https://") {
			t.Errorf("%d %q", resp.StatusCode, body)
		}
		if resp.Trailer.Get("Grpc-Status") != "0" {
			t.Errorf("trailer %v", resp.Trailer)
		}
	})
}

func TestH2CSlow504(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-time.After(3 * time.Second):
		}
	}))
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = &protos
	srv.Start()
	t.Cleanup(srv.Close)
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: "h2c://" + strings.TrimPrefix(srv.URL, "http://")}},
		ResponseHeaderTimeout: 150 * time.Millisecond})
	engines(t, p, func(t *testing.T, e exchangetest.Engine) {
		if resp, body := get(t, e, "/"); resp.StatusCode != 504 || body != "gateway timeout\n" {
			t.Errorf("%d %q", resp.StatusCode, body)
		}
	})
}

func TestIPHashBehindTrustedProxy(t *testing.T) {
	var ups []proxy.Upstream
	for i := 0; i < 4; i++ {
		name := fmt.Sprint("b", i)
		ups = append(ups, proxy.Upstream{URL: backend(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, name) }).URL})
	}
	p := newProxy(t, proxy.Options{Upstreams: ups, Balance: "ip_hash",
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	e := exchangetest.Engines(t, p)[0]
	seen := map[string]bool{}
	for i := 0; i < 40; i++ {
		client := fmt.Sprintf("203.0.113.%d", i)
		_, first := get(t, e, "/", "X-Forwarded-For", client)
		_, again := get(t, e, "/", "X-Forwarded-For", client)
		if first != again {
			t.Fatalf("client %s moved from %s to %s", client, first, again)
		}
		seen[first] = true
	}
	if len(seen) < 3 {
		t.Errorf("40 clients hashed onto %d upstreams", len(seen))
	}
}

// TestStaleKeepAlivePOST: the upstream closes idle connections quickly
// (as Node.js does after 5s); a POST sent after that must not land on a
// dead pooled connection and fail.
func TestStaleKeepAlivePOST(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "done")
	}))
	srv.Config.IdleTimeout = 50 * time.Millisecond
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	t.Cleanup(srv.Close)
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: srv.URL}}})
	e := exchangetest.Engines(t, p)[0]
	for i := 0; i < 3; i++ {
		req, _ := http.NewRequest("POST", e.URL+"/", strings.NewReader("order"))
		if resp, body := do(t, e, req); resp.StatusCode != 200 || body != "done" {
			t.Fatalf("POST %d: %d %q", i, resp.StatusCode, body)
		}
		time.Sleep(300 * time.Millisecond) // the upstream drops the idle connection
	}
	if hits.Load() != 3 || p.Stats()[0].Failures != 0 {
		t.Errorf("hits %d, stats %+v", hits.Load(), p.Stats()[0])
	}
}
