// Package exchangetest runs an exchange.Handler behind every engine
// adapter on loopback, so that one table test covers them all: fasthttp
// (HTTP/1.1), net/http (HTTP/1.1 and HTTP/2 without TLS), sluice's own
// HTTP/2 engine (host/h2, without TLS) and quic-go's
// http3.Server (HTTP/3 over UDP, with a throwaway certificate the
// engine's client trusts).
package exchangetest

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/h2"
	"github.com/sluicehq/sluice/host/internal/lazyconn"
	"github.com/valyala/fasthttp"
)

// Engine is one running server for a test.
type Engine struct {
	// Name is "fast" (fasthttp, HTTP/1.1), "std" (net/http, HTTP/1.1),
	// "std-h2c" (net/http, HTTP/2 without TLS), "h2" (sluice's own
	// HTTP/2 engine, host/h2, without TLS) or "h3" (quic-go's
	// http3.Server, HTTP/3 over UDP).
	Name string
	// URL is "http://127.0.0.1:PORT", or "https://127.0.0.1:PORT" for
	// "h3" (a UDP port; nothing listens on TCP there).
	URL string
	// Client speaks the engine's protocol; redirects are not followed.
	// For "h3" its Transport is an *http3.Transport that trusts the
	// engine's certificate (and no other).
	Client *http.Client
	// Proto is what responses must carry ("HTTP/1.1", "HTTP/2.0" or
	// "HTTP/3.0").
	Proto string
}

// RenderError is the error renderer the test engines use: the status of
// the error and its message as plain text.
func RenderError(x exchange.Exchange, err error) {
	status := exchange.StatusOf(err)
	msg := http.StatusText(status)
	var e *exchange.Error
	if errors.As(err, &e) && e.Message != "" {
		msg = e.Message
	}
	x.ResetBody()
	x.SetStatus(status)
	x.SetResponseHeader("Content-Type", "text/plain; charset=utf-8")
	x.SetBody([]byte(msg + "\n"))
}

// Engines starts h behind each adapter and stops them when t ends.
func Engines(t testing.TB, h exchange.Handler) []Engine {
	t.Helper()
	return []Engine{startFast(t, h), startStd(t, h, false), startStd(t, h, true), startH2(t, h), startH3(t, h)}
}

func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

func startFast(t testing.TB, h exchange.Handler) Engine {
	ln := lazyconn.Listener{Listener: listen(t)} // as the host's listeners
	srv := &fasthttp.Server{
		Handler:                       exchange.Fast(h, RenderError, false),
		NoDefaultServerHeader:         true, // as the host's listeners: the front door sets Server
		NoDefaultContentType:          true,
		DisablePreParseMultipartForm:  true,
		DisableHeaderNamesNormalizing: false,
		ReadTimeout:                   10 * time.Second,
		StreamRequestBody:             true, // as the host's listeners
		WriteBufferSize:               exchange.FastWriteBufferSize,
	}
	go srv.Serve(ln)
	t.Cleanup(func() { _ = srv.Shutdown() })
	tr := &http.Transport{DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return Engine{Name: "fast", URL: "http://" + ln.Addr().String(), Proto: "HTTP/1.1",
		Client: &http.Client{Transport: tr, CheckRedirect: noRedirect, Timeout: 10 * time.Second}}
}

func startStd(t testing.TB, h exchange.Handler, h2c bool) Engine {
	ln := listen(t)
	srv := &http.Server{Handler: exchange.Std(h, RenderError), ReadHeaderTimeout: 10 * time.Second}
	tr := &http.Transport{DisableCompression: true, TLSClientConfig: &tls.Config{}}
	name, proto := "std", "HTTP/1.1"
	if h2c {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		p.SetHTTP1(true)
		srv.Protocols = &p
		var cp http.Protocols
		cp.SetUnencryptedHTTP2(true)
		tr.Protocols = &cp
		name, proto = "std-h2c", "HTTP/2.0"
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	t.Cleanup(tr.CloseIdleConnections)
	return Engine{Name: name, URL: "http://" + ln.Addr().String(), Proto: proto,
		Client: &http.Client{Transport: tr, CheckRedirect: noRedirect, Timeout: 10 * time.Second}}
}

// startH2 serves h with sluice's own HTTP/2 engine, cleartext with prior
// knowledge.
func startH2(t testing.TB, h exchange.Handler) Engine {
	ln := listen(t)
	srv := h2.New(h2.Options{Handler: h, OnError: RenderError, ReadHeaderTimeout: 10 * time.Second})
	go srv.Serve(ln)
	t.Cleanup(func() {
		_ = ln.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	var cp http.Protocols
	cp.SetUnencryptedHTTP2(true)
	tr := &http.Transport{DisableCompression: true, Protocols: &cp}
	t.Cleanup(tr.CloseIdleConnections)
	return Engine{Name: "h2", URL: "http://" + ln.Addr().String(), Proto: "HTTP/2.0",
		Client: &http.Client{Transport: tr, CheckRedirect: noRedirect, Timeout: 10 * time.Second}}
}

// Addr returns the host:port of an engine's URL (a UDP address for
// "h3", a TCP one otherwise).
func (e Engine) Addr() string {
	u := e.URL
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+len("://"):]
	}
	return u
}

// Port returns the port of an engine's URL.
func (e Engine) Port() int {
	_, p, _ := net.SplitHostPort(e.Addr())
	n, _ := strconv.Atoi(p)
	return n
}
