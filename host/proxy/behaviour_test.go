package proxy_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/proxy"
	"golang.org/x/net/websocket"
)

func engines(t *testing.T, p *proxy.Handler, fn func(t *testing.T, e exchangetest.Engine)) {
	for _, e := range exchangetest.Engines(t, p) {
		t.Run(e.Name, func(t *testing.T) { fn(t, e) })
	}
}

func within(t testing.TB, d time.Duration, cond func() bool) bool {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

// ---- TLS ----

type pki struct {
	caPEM                 []byte
	ca                    *x509.Certificate
	caKey                 *ecdsa.PrivateKey
	dir                   string
	caFile                string
	clientCert, clientKey string
}

func newPKI(t *testing.T) *pki {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sluice test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	p := &pki{ca: ca, caKey: key, dir: t.TempDir()}
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	p.caFile = filepath.Join(p.dir, "ca.pem")
	os.WriteFile(p.caFile, p.caPEM, 0o600)
	cert := p.issue(t, "client", nil, x509.ExtKeyUsageClientAuth)
	p.clientCert, p.clientKey = filepath.Join(p.dir, "client.pem"), filepath.Join(p.dir, "client.key")
	os.WriteFile(p.clientCert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600)
	kb, _ := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	os.WriteFile(p.clientKey, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return p
}

func (p *pki) issue(t *testing.T, cn string, dns []string, usage x509.ExtKeyUsage) tls.Certificate {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: dns, ExtKeyUsage: []x509.ExtKeyUsage{usage}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestTLSBackend(t *testing.T) {
	p := newPKI(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cn := ""
		if len(r.TLS.PeerCertificates) > 0 {
			cn = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		fmt.Fprintf(w, "tls ok %s %s", r.TLS.ServerName, cn)
	}))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.caPEM)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{p.issue(t, "backend", []string{"backend.test"}, x509.ExtKeyUsageServerAuth)},
		ClientCAs: pool, ClientAuth: tls.VerifyClientCertIfGiven}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ups := []proxy.Upstream{{URL: srv.URL}}

	good := newProxy(t, proxy.Options{Upstreams: ups, TLS: &proxy.TLSOptions{CA: p.caFile, ServerName: "backend.test"}})
	mtls := newProxy(t, proxy.Options{Upstreams: ups, TLS: &proxy.TLSOptions{CA: p.caFile, ServerName: "backend.test",
		Cert: p.clientCert, Key: p.clientKey}})
	untrusted := newProxy(t, proxy.Options{Upstreams: ups})
	wrongName := newProxy(t, proxy.Options{Upstreams: ups, TLS: &proxy.TLSOptions{CA: p.caFile, ServerName: "other.test"}})
	insecure := newProxy(t, proxy.Options{Upstreams: ups, TLS: &proxy.TLSOptions{InsecureSkipVerify: true}})
	cases := []struct {
		name   string
		p      *proxy.Handler
		status int
		body   string
	}{
		{"ca+sni", good, 200, "tls ok backend.test "},
		{"mtls", mtls, 200, "tls ok backend.test client"},
		{"system roots", untrusted, 502, "bad gateway\n"},
		{"wrong name", wrongName, 502, "bad gateway\n"},
		{"insecure", insecure, 200, "tls ok  "}, // no SNI for an IP address
	}
	for _, c := range cases {
		for _, e := range exchangetest.Engines(t, c.p) {
			resp, body := get(t, e, "/")
			if resp.StatusCode != c.status || body != c.body {
				t.Errorf("%s/%s: %d %q, want %d %q", c.name, e.Name, resp.StatusCode, body, c.status, c.body)
			}
		}
	}
}

// ---- HTTP/2 (h2c) with gRPC-style trailers ----

func TestH2CTrailers(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			http.Error(w, "want HTTP/2, got "+r.Proto, 505)
			return
		}
		in, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("X-TE", r.Header.Get("TE"))
		w.WriteHeader(200)
		w.Write(append([]byte("echo:"), in...))
		w.(http.Flusher).Flush()
		w.Header().Set(http.TrailerPrefix+"Grpc-Status", "0")
		w.Header().Set(http.TrailerPrefix+"Grpc-Message", "fine")
	}))
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = &protos
	srv.Start()
	t.Cleanup(srv.Close)
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: "h2c://" + strings.TrimPrefix(srv.URL, "http://")}}})
	engines(t, p, func(t *testing.T, e exchangetest.Engine) {
		req, _ := http.NewRequest("POST", e.URL+"/pkg.Svc/Call", strings.NewReader("ping"))
		req.Header.Set("Content-Type", "application/grpc")
		req.Header.Set("TE", "trailers")
		resp, body := do(t, e, req)
		if resp.StatusCode != 200 || body != "echo:ping" {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
		if resp.Header.Get("X-TE") != "trailers" {
			t.Errorf("TE sent upstream: %q", resp.Header.Get("X-TE"))
		}
		if resp.Trailer.Get("Grpc-Status") != "0" || resp.Trailer.Get("Grpc-Message") != "fine" {
			t.Errorf("trailers %v", resp.Trailer)
		}
	})
}

// ---- WebSocket ----

func TestWebSocket(t *testing.T) {
	be := backend(t, websocket.Handler(func(c *websocket.Conn) {
		for {
			var msg string
			if websocket.Message.Receive(c, &msg) != nil || websocket.Message.Send(c, msg) != nil {
				return
			}
		}
	}).ServeHTTP)
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: be.URL}}})
	engines(t, p, func(t *testing.T, e exchangetest.Engine) {
		switch e.Name {
		case "h2":
			wsOverH2(t, e, "/ws", []string{"hello", strings.Repeat("z", 100<<10)})
			return
		case "std-h2c":
			t.Skip(`net/http's HTTP/2 server (http2_engine = "std") has no extended CONNECT`)
		}
		if e.Proto == "HTTP/3.0" {
			t.Skip("a WebSocket client speaks HTTP/1.1 over TCP; covered by std")
		}
		ws, err := websocket.Dial("ws"+strings.TrimPrefix(e.URL, "http")+"/ws", "", "http://example.com/")
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		ws.SetDeadline(time.Now().Add(5 * time.Second))
		for _, msg := range []string{"hello", strings.Repeat("z", 100<<10)} {
			if err := websocket.Message.Send(ws, msg); err != nil {
				t.Fatal(err)
			}
			var got string
			if err := websocket.Message.Receive(ws, &got); err != nil {
				t.Fatal(err)
			}
			if got != msg {
				t.Fatalf("echo: %d bytes, want %d", len(got), len(msg))
			}
		}
	})
}

// ---- streaming ----

func TestSSEFlushesAtOnce(t *testing.T) {
	var mu sync.Mutex
	gates := map[string]chan struct{}{}
	gate := func(id string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if gates[id] == nil {
			gates[id] = make(chan struct{})
		}
		return gates[id]
	}
	be := backend(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-gate(r.URL.Query().Get("id")):
		case <-time.After(5 * time.Second):
		}
		io.WriteString(w, "data: two\n\n")
	})
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: be.URL}}})
	engines(t, p, func(t *testing.T, e exchangetest.Engine) {
		resp, err := e.Client.Get(e.URL + "/events?id=" + e.Name)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		first := make(chan string, 1)
		go func() {
			l, _ := br.ReadString('\n')
			first <- l
		}()
		select {
		case l := <-first:
			if l != "data: one\n" {
				t.Fatalf("first line %q", l)
			}
		case <-time.After(3 * time.Second):
			t.Fatal("first event held back")
		}
		close(gate(e.Name))
		rest, _ := io.ReadAll(br)
		if string(rest) != "\ndata: two\n\n" {
			t.Errorf("rest %q", rest)
		}
	})
}

func TestBackendKilledMidStream(t *testing.T) {
	be := backend(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			io.WriteString(w, "fine")
			return
		}
		conn, bw, _ := w.(http.Hijacker).Hijack()
		if r.URL.Path == "/sized" {
			bw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 200000\r\n\r\n")
		} else {
			bw.WriteString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
			bw.WriteString("a\r\n0123456789\r\n")
		}
		bw.WriteString(strings.Repeat("p", 100))
		bw.Flush()
		time.Sleep(50 * time.Millisecond)
		conn.Close()
	})
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: be.URL}}})
	engines(t, p, func(t *testing.T, e exchangetest.Engine) {
		for _, path := range []string{"/sized", "/chunked"} {
			resp, err := e.Client.Get(e.URL + path)
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			if err == nil {
				t.Errorf("%s: truncated body read without error", path)
			}
			if _, body := get(t, e, "/ok"); body != "fine" {
				t.Errorf("after %s: %q", path, body)
			}
		}
	})
}

// ---- timeouts and errors ----

func TestSlowBackend504(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	be := backend(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-time.After(3 * time.Second):
		}
	})
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: be.URL}}, ResponseHeaderTimeout: 150 * time.Millisecond})
	engines(t, p, func(t *testing.T, e exchangetest.Engine) {
		start := time.Now()
		resp, body := get(t, e, "/")
		if resp.StatusCode != 504 || body != "gateway timeout\n" {
			t.Errorf("%d %q", resp.StatusCode, body)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("took %v", d)
		}
	})
}

// TestClientGoneAbandonsUpstream: a client that leaves while the
// upstream is still working (before its response headers, or between two
// events of a stream) makes the proxy close its upstream request (the
// upstream sees its client leave, as behind nginx), over each client
// protocol and to HTTP/1.1 and HTTP/2 upstreams, and the upstream is not
// blamed for it.
func TestClientGoneAbandonsUpstream(t *testing.T) {
	proxy.SetClientCheck(t, 30*time.Millisecond)
	for _, kind := range []string{"http", "h2c"} {
		for _, when := range []string{"waiting", "streaming"} {
			t.Run(kind+"/"+when, func(t *testing.T) {
				abandoned := make(chan time.Duration, 8)
				h := func(w http.ResponseWriter, r *http.Request) {
					if when == "streaming" {
						w.Header().Set("Content-Type", "text/event-stream")
						io.WriteString(w, "data: 0\n\n")
						w.(http.Flusher).Flush()
					}
					start := time.Now()
					select {
					case <-r.Context().Done():
						abandoned <- time.Since(start)
					case <-time.After(5 * time.Second):
						abandoned <- -1
					}
				}
				var up string
				if kind == "http" {
					up = backend(t, h).URL
				} else {
					up = h2cBackend(t, h)
				}
				p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: up}}, Passive: &proxy.Passive{MaxFails: 1, CoolDown: time.Minute}})
				engines(t, p, func(t *testing.T, e exchangetest.Engine) {
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					req, _ := http.NewRequestWithContext(ctx, "GET", e.URL+"/slow", nil)
					if when == "waiting" {
						time.AfterFunc(100*time.Millisecond, cancel)
						if resp, err := e.Client.Do(req); err == nil {
							resp.Body.Close()
							t.Fatalf("got %d, want the request cancelled", resp.StatusCode)
						}
					} else {
						resp, err := e.Client.Do(req)
						if err != nil {
							t.Fatal(err)
						}
						line, err := bufio.NewReader(resp.Body).ReadString('\n')
						if err != nil || line != "data: 0\n" {
							t.Fatalf("first event %q, %v", line, err)
						}
						cancel()
						resp.Body.Close()
					}
					select {
					case d := <-abandoned:
						if d < 0 {
							t.Fatal("the upstream request outlived its client by 5s")
						}
					case <-time.After(6 * time.Second):
						t.Fatal("the upstream never saw the request")
					}
					for _, st := range p.Stats() {
						if !st.Healthy || st.Failures != 0 {
							t.Fatalf("upstream blamed for the client leaving: %+v", st)
						}
					}
				})
			})
		}
	}
}

func TestUnreachable502(t *testing.T) {
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: deadURL(t)}}})
	engines(t, p, func(t *testing.T, e exchangetest.Engine) {
		resp, body := get(t, e, "/")
		if resp.StatusCode != 502 || body != "bad gateway\n" {
			t.Errorf("%d %q", resp.StatusCode, body)
		}
	})
}

// ---- health ----

func TestFlappingHealthCheck(t *testing.T) {
	var healthy atomic.Bool
	healthy.Store(true)
	flappy := backend(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" && !healthy.Load() {
			w.WriteHeader(503)
			return
		}
		io.WriteString(w, "flappy")
	})
	steady := backend(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "steady") })
	p := newProxy(t, proxy.Options{
		Upstreams: []proxy.Upstream{{URL: flappy.URL}, {URL: steady.URL}},
		Health:    &proxy.HealthCheck{Path: "/health", Interval: 20 * time.Millisecond, Timeout: 200 * time.Millisecond, Rise: 2, Fall: 2},
	})
	e := exchangetest.Engines(t, p)[0]
	for round := 0; round < 2; round++ {
		healthy.Store(false)
		if !within(t, 3*time.Second, func() bool { return !p.Stats()[0].Healthy }) {
			t.Fatal("not ejected")
		}
		for i := 0; i < 6; i++ {
			if _, body := get(t, e, "/"); body != "steady" {
				t.Fatalf("request went to the ejected upstream: %q", body)
			}
		}
		healthy.Store(true)
		if !within(t, 3*time.Second, func() bool { return p.Stats()[0].Healthy }) {
			t.Fatal("not readmitted")
		}
		seen := map[string]bool{}
		for i := 0; i < 6; i++ {
			_, body := get(t, e, "/")
			seen[body] = true
		}
		if !seen["flappy"] {
			t.Fatal("readmitted upstream gets no requests")
		}
	}
}

// TestNewStartsNothing: New builds a handler with health checks but
// probes nothing until Start; Close without Start is clean.
func TestNewStartsNothing(t *testing.T) {
	var probes atomic.Int32
	be := backend(t, func(w http.ResponseWriter, r *http.Request) { probes.Add(1) })
	o := proxy.Options{Upstreams: []proxy.Upstream{{URL: be.URL}}, Logger: slog.New(slog.DiscardHandler),
		Health: &proxy.HealthCheck{Path: "/h", Interval: 5 * time.Millisecond}}
	unstarted, err := proxy.New(o)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // ten intervals
	if n := probes.Load(); n != 0 {
		t.Fatalf("%d health probes before Start", n)
	}
	unstarted.Close()
	p := newProxy(t, o)
	if !within(t, 3*time.Second, func() bool { return probes.Load() > 0 }) {
		t.Fatal("no health probe after Start")
	}
	_ = p
}

func TestAllDown503(t *testing.T) {
	down := backend(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) })
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: down.URL}},
		Health: &proxy.HealthCheck{Path: "/h", Interval: 10 * time.Millisecond, Fall: 1}})
	if !within(t, 3*time.Second, func() bool { return !p.Stats()[0].Healthy }) {
		t.Fatal("not marked down")
	}
	engines(t, p, func(t *testing.T, e exchangetest.Engine) {
		resp, body := get(t, e, "/")
		if resp.StatusCode != 503 || body != "no healthy upstream\n" {
			t.Errorf("%d %q", resp.StatusCode, body)
		}
	})
}

func TestDeadUpstreamEjectedAndReadmitted(t *testing.T) {
	good := backend(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "good") })
	dead := deadURL(t)
	p := newProxy(t, proxy.Options{
		Upstreams: []proxy.Upstream{{URL: dead}, {URL: good.URL}},
		Passive:   &proxy.Passive{MaxFails: 2, CoolDown: 300 * time.Millisecond},
	})
	e := exchangetest.Engines(t, p)[0]
	for i := 0; i < 6; i++ {
		if resp, body := get(t, e, "/"); resp.StatusCode != 200 || body != "good" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
	}
	st := p.Stats()
	if st[0].Healthy || st[0].Failures != 2 {
		t.Fatalf("dead upstream not ejected after 2 failures: %+v", st[0])
	}
	// Bring it to life on the same address; it is readmitted after the
	// cool-down and gets traffic again.
	ln, err := net.Listen("tcp", strings.TrimPrefix(dead, "http://"))
	if err != nil {
		t.Skipf("cannot reuse the dead port: %v", err)
	}
	revived := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "revived") })}
	go revived.Serve(ln)
	t.Cleanup(func() { revived.Close() })
	if !within(t, 2*time.Second, func() bool { return p.Stats()[0].Healthy }) {
		t.Fatal("not readmitted after cool-down")
	}
	seen := map[string]int{}
	for i := 0; i < 10; i++ {
		_, body := get(t, e, "/")
		seen[body]++
	}
	if seen["revived"] == 0 {
		t.Errorf("readmitted upstream gets nothing: %v", seen)
	}
}

// ---- retries ----

// blackhole accepts requests, counts them, and closes the connection
// without answering: the request was received but may have had effects.
func blackhole(t *testing.T, count *atomic.Int64) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					count.Add(1)
					return
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

func TestRetriesNeverDuplicatePOST(t *testing.T) {
	var holeHits, goodHits atomic.Int64
	good := backend(t, func(w http.ResponseWriter, r *http.Request) {
		goodHits.Add(1)
		io.WriteString(w, "good "+r.Method)
	})
	hole := blackhole(t, &holeHits)
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: hole}, {URL: good.URL}}, Passive: &proxy.Passive{MaxFails: -1}})
	engines(t, p, func(t *testing.T, e exchangetest.Engine) {
		for i := 0; i < 4; i++ {
			holeHits.Store(0)
			goodHits.Store(0)
			req, _ := http.NewRequest("POST", e.URL+"/order", strings.NewReader("one order"))
			resp, _ := do(t, e, req)
			if n := holeHits.Load() + goodHits.Load(); n != 1 {
				t.Fatalf("POST reached upstreams %d times (status %d)", n, resp.StatusCode)
			}
			if holeHits.Load() == 1 && resp.StatusCode != 502 {
				t.Errorf("POST lost upstream: %d, want 502", resp.StatusCode)
			}
			holeHits.Store(0)
			goodHits.Store(0)
			resp, body := get(t, e, "/item")
			if resp.StatusCode != 200 || body != "good GET" {
				t.Errorf("GET not retried: %d %q", resp.StatusCode, body)
			}
			if goodHits.Load() != 1 || holeHits.Load() > 1 {
				t.Errorf("GET: good %d, hole %d", goodHits.Load(), holeHits.Load())
			}
		}
	})
}

func TestRetryAfterDialFailure(t *testing.T) {
	var hits atomic.Int64
	good := backend(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	})
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: deadURL(t)}, {URL: deadURL(t)}, {URL: good.URL}},
		Passive: &proxy.Passive{MaxFails: -1}})
	engines(t, p, func(t *testing.T, e exchangetest.Engine) {
		for i := 0; i < 6; i++ {
			hits.Store(0)
			req, _ := http.NewRequest("POST", e.URL+"/", strings.NewReader("body"))
			resp, body := do(t, e, req)
			if resp.StatusCode != 200 || body != "body" || hits.Load() != 1 {
				t.Fatalf("POST after dial failures: %d %q hits=%d", resp.StatusCode, body, hits.Load())
			}
		}
	})
}

// ---- headers ----

func echoHeaders(t *testing.T) *httptest.Server {
	return backend(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "host=%s\nuri=%s\n", r.Host, r.RequestURI)
		for _, k := range []string{"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "Forwarded", "X-Up", "X-Gone", "X-Multi", "Connection", "X-Hop", "Keep-Alive", "Proxy-Authorization", "Cookie"} {
			fmt.Fprintf(w, "%s=%s\n", k, strings.Join(r.Header.Values(k), "|"))
		}
		w.Header().Set("X-Down-Remove", "x")
		w.Header().Set("X-Down-Set", "old")
	})
}

func field(body, k string) string {
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, k+"="); ok {
			return v
		}
	}
	return "<missing>"
}

func TestForwardedHeaders(t *testing.T) {
	be := echoHeaders(t)
	untrusted := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: be.URL}}})
	trusted := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: be.URL}},
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	spoof := []string{"X-Forwarded-For", "198.51.100.1", "X-Forwarded-Proto", "https", "X-Forwarded-Host", "evil.test",
		"Forwarded", "for=198.51.100.1;proto=https", "Proxy-Authorization", "secret"}
	hop := []string{"Connection", "X-Hop", "X-Hop", "1", "Keep-Alive", "300"}
	for _, e := range exchangetest.Engines(t, untrusted) {
		h := spoof
		if e.Proto == "HTTP/1.1" {
			h = append(h[:len(h):len(h)], hop...) // HTTP/2 and HTTP/3 have no connection headers
		}
		_, body := get(t, e, "/", h...)
		proto, host, _ := strings.Cut(e.URL, "://")
		want := map[string]string{
			"X-Forwarded-For": "127.0.0.1", "X-Forwarded-Proto": proto, "X-Forwarded-Host": host,
			"Forwarded": `for=127.0.0.1;proto=` + proto + `;host="` + host + `"`, "X-Hop": "", "Connection": "", "Keep-Alive": "", "Proxy-Authorization": "",
		}
		for k, v := range want {
			if got := field(body, k); got != v {
				t.Errorf("untrusted/%s: %s = %q, want %q", e.Name, k, got, v)
			}
		}
	}
	for _, e := range exchangetest.Engines(t, trusted) {
		_, body := get(t, e, "/", spoof...)
		proto, host, _ := strings.Cut(e.URL, "://")
		want := map[string]string{
			"X-Forwarded-For": "198.51.100.1, 127.0.0.1", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "evil.test",
			"Forwarded": `for=198.51.100.1;proto=https, for=127.0.0.1;proto=` + proto + `;host="` + host + `"`,
		}
		for k, v := range want {
			if got := field(body, k); got != v {
				t.Errorf("trusted/%s: %s = %q, want %q", e.Name, k, got, v)
			}
		}
	}
}

func TestHeaderOpsStripPrefixHost(t *testing.T) {
	be := echoHeaders(t)
	p := newProxy(t, proxy.Options{
		Upstreams:   []proxy.Upstream{{URL: be.URL}},
		StripPrefix: "/api",
		HostHeader:  "keep",
		HeaderUp:    &proxy.HeaderOps{Set: map[string]string{"X-Up": "set"}, Add: map[string]string{"X-Multi": "b"}, Remove: []string{"X-Gone"}},
		HeaderDown:  &proxy.HeaderOps{Set: map[string]string{"X-Down-Set": "new"}, Add: map[string]string{"X-Down-Add": "added"}, Remove: []string{"X-Down-Remove"}},
	})
	engines(t, p, func(t *testing.T, e exchangetest.Engine) {
		resp, body := get(t, e, "/api/users/%7E1?q=2", "X-Gone", "bye", "X-Multi", "a", "X-Up", "client")
		host := e.Addr()
		for k, v := range map[string]string{"host": host, "uri": "/users/%7E1?q=2", "X-Up": "set", "X-Gone": "", "X-Multi": "a|b"} {
			if got := field(body, k); got != v {
				t.Errorf("%s = %q, want %q", k, got, v)
			}
		}
		if resp.Header.Get("X-Down-Set") != "new" || resp.Header.Get("X-Down-Add") != "added" || resp.Header.Get("X-Down-Remove") != "" {
			t.Errorf("header_down: %v", resp.Header)
		}
		_, body = get(t, e, "/api")
		if got := field(body, "uri"); got != "/" {
			t.Errorf("/api → %q, want /", got)
		}
		_, body = get(t, e, "/apiary")
		if got := field(body, "uri"); got != "/apiary" {
			t.Errorf("/apiary → %q, want it untouched", got)
		}
	})
}

// TestCookiesOneLine: Cookie fields reach an HTTP/1.1 upstream as one
// line (RFC 9113, 8.2.3, for HTTP/2 clients), from each client protocol.
func TestCookiesOneLine(t *testing.T) {
	be := echoHeaders(t)
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: be.URL}}})
	engines(t, p, func(t *testing.T, e exchangetest.Engine) {
		req, _ := http.NewRequest("GET", e.URL+"/", nil)
		req.Header.Add("Cookie", "a=1")
		req.Header.Add("Cookie", "b=2")
		_, body := do(t, e, req)
		if got := field(body, "Cookie"); got != "a=1; b=2" {
			t.Errorf("Cookie = %q, want one field \"a=1; b=2\"", got)
		}
	})
	if _, err := proxy.New(proxy.Options{Upstreams: []proxy.Upstream{{URL: be.URL}},
		HeaderUp: &proxy.HeaderOps{Set: map[string]string{"X-Up": "a\r\nX-Evil: 1"}}}); err == nil {
		t.Error("a header_up value with CR LF was accepted")
	}
}

// TestStreamedUpload: a request body of unknown length goes up chunked,
// each piece as the client sends it: the upstream has the first piece
// before the client sends the second.
func TestStreamedUpload(t *testing.T) {
	var gotFirst chan struct{}
	be := backend(t, func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 5)
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		close(gotFirst)
		rest, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s%s %v", buf, rest, r.TransferEncoding)
	})
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: be.URL}}})
	engines(t, p, func(t *testing.T, e exchangetest.Engine) {
		gotFirst = make(chan struct{})
		pr, pw := io.Pipe()
		go func() {
			pw.Write([]byte("hello"))
			select {
			case <-gotFirst:
				pw.Write([]byte(" world"))
				pw.Close()
			case <-time.After(5 * time.Second):
				pw.CloseWithError(fmt.Errorf("the upstream never saw the first piece"))
			}
		}()
		req, _ := http.NewRequest("POST", e.URL+"/", pr)
		req.ContentLength = -1
		resp, body := do(t, e, req)
		if resp.StatusCode != 200 || body != "hello world [chunked]" {
			t.Errorf("%d %q", resp.StatusCode, body)
		}
	})
}

// TestRequestTrailers: the trailer fields of a chunked upload reach an
// HTTP/1.1 upstream after the body, declared in its Trailer header.
func TestRequestTrailers(t *testing.T) {
	be := backend(t, func(w http.ResponseWriter, r *http.Request) {
		declared := "undeclared" // net/http moves a Trailer header into Trailer's keys
		if _, ok := r.Trailer["X-Checksum"]; ok {
			declared = "declared"
		}
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s", b, r.Trailer.Get("X-Checksum"), declared)
	})
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: be.URL}}})
	engines(t, p, func(t *testing.T, e exchangetest.Engine) {
		req, _ := http.NewRequest("POST", e.URL+"/", io.MultiReader(strings.NewReader("part1 "), strings.NewReader("part2")))
		req.ContentLength = -1
		req.Trailer = http.Header{"X-Checksum": {"abc123"}}
		resp, body := do(t, e, req)
		if resp.StatusCode != 200 || body != "part1 part2 abc123 declared" {
			t.Errorf("%d %q", resp.StatusCode, body)
		}
	})
}

func TestBodyLimit413(t *testing.T) {
	var hits atomic.Int64
	be := backend(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		fmt.Fprint(w, len(b))
	})
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: be.URL}}, MaxBody: 1000})
	engines(t, p, func(t *testing.T, e exchangetest.Engine) {
		req, _ := http.NewRequest("POST", e.URL+"/", strings.NewReader(strings.Repeat("a", 1000)))
		if resp, body := do(t, e, req); resp.StatusCode != 200 || body != "1000" {
			t.Errorf("at the limit: %d %q", resp.StatusCode, body)
		}
		req, _ = http.NewRequest("POST", e.URL+"/", strings.NewReader(strings.Repeat("a", 1001)))
		if resp, _ := do(t, e, req); resp.StatusCode != 413 {
			t.Errorf("over the limit: %d", resp.StatusCode)
		}
		// Unknown length (chunked): cut off once past the limit.
		req, _ = http.NewRequest("POST", e.URL+"/", io.MultiReader(strings.NewReader(strings.Repeat("a", 3000))))
		req.ContentLength = -1
		if resp, _ := do(t, e, req); resp.StatusCode != 413 {
			t.Errorf("chunked over the limit: %d", resp.StatusCode)
		}
	})
}

func TestStickyCookie(t *testing.T) {
	var bes []proxy.Upstream
	for i := 0; i < 3; i++ {
		name := fmt.Sprint("b", i)
		bes = append(bes, proxy.Upstream{URL: backend(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, name) }).URL})
	}
	p := newProxy(t, proxy.Options{Upstreams: bes, Balance: "cookie"})
	engines(t, p, func(t *testing.T, e exchangetest.Engine) {
		resp, first := get(t, e, "/")
		c := resp.Header.Get("Set-Cookie")
		if !strings.HasPrefix(c, "sluice_upstream=") || strings.Contains(c, "127.0.0.1") {
			t.Fatalf("Set-Cookie %q", c)
		}
		for i := 0; i < 5; i++ {
			resp, body := get(t, e, "/", "Cookie", strings.Split(c, ";")[0])
			if body != first || resp.Header.Get("Set-Cookie") != "" {
				t.Fatalf("sticky: %q after %q, Set-Cookie %q", body, first, resp.Header.Get("Set-Cookie"))
			}
		}
	})
}

func TestBalanceThroughProxy(t *testing.T) {
	for _, policy := range []string{"round_robin", "least_conn", "random_two", "ip_hash", "header_hash"} {
		var hits [3]atomic.Int64
		var ups []proxy.Upstream
		for i := range hits {
			i := i
			ups = append(ups, proxy.Upstream{URL: backend(t, func(w http.ResponseWriter, r *http.Request) { hits[i].Add(1) }).URL})
		}
		p := newProxy(t, proxy.Options{Upstreams: ups, Balance: policy, HashHeader: "X-User"})
		e := exchangetest.Engines(t, p)[0]
		for i := 0; i < 90; i++ {
			get(t, e, "/", "X-User", fmt.Sprint("u", i))
		}
		var got []int64
		for i := range hits {
			got = append(got, hits[i].Load())
		}
		switch policy {
		case "ip_hash":
			if got[0]+got[1]+got[2] != 90 || (got[0] != 90 && got[1] != 90 && got[2] != 90) {
				t.Errorf("%s: one client spread over %v", policy, got)
			}
		default:
			for _, n := range got {
				if n < 10 {
					t.Errorf("%s: distribution %v", policy, got)
				}
			}
		}
	}
}

func TestNew(t *testing.T) {
	bad := []proxy.Options{
		{},
		{Upstreams: []proxy.Upstream{{URL: "ftp://x:1"}}},
		{Upstreams: []proxy.Upstream{{URL: "http://x:1/path"}}},
		{Upstreams: []proxy.Upstream{{URL: "http://x:1"}}, Balance: "fastest"},
		{Upstreams: []proxy.Upstream{{URL: "http://x:1"}}, Balance: "header_hash"},
		{Upstreams: []proxy.Upstream{{URL: "http://x:1"}}, HostHeader: "not a host"},
		{Upstreams: []proxy.Upstream{{URL: "http://x:1"}}, TLS: &proxy.TLSOptions{CA: "/nonexistent"}},
		{Upstreams: []proxy.Upstream{{URL: "http://x:1"}}, Health: &proxy.HealthCheck{}},
		{Upstreams: []proxy.Upstream{{URL: "http://x:1"}}, HeaderUp: &proxy.HeaderOps{Set: map[string]string{"X": "a\r\nb"}}},
	}
	for i, o := range bad {
		if p, err := proxy.New(o); err == nil {
			p.Close()
			t.Errorf("case %d accepted", i)
		}
	}
}
