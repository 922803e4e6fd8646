package host

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/generation"
	"github.com/sluicehq/sluice/host/route"
)

// slowGeneration serves one route whose handler waits on release.
func slowGeneration(t *testing.T, addr string, release <-chan struct{}, started chan<- struct{}, closed *atomic.Int32) *generation.Generation {
	site := &route.Site{Name: "s", Routes: []*route.Route{{Prefix: "/", Handler: exchange.HandlerFunc(func(x exchange.Exchange) error {
		started <- struct{}{}
		<-release
		x.SetBody([]byte("done"))
		return nil
	})}}}
	tab, err := route.NewTable([]*route.Site{site})
	if err != nil {
		t.Fatal(err)
	}
	return &generation.Generation{
		Tables:    map[string]*route.Table{addr: tab},
		Listeners: []*config.Listener{{Address: addr, MaxHeaderBytes: 16 << 10}},
		Grace:     5 * time.Second,
		Closers:   []func() error{func() error { closed.Add(1); return nil }},
	}
}

// TestShutdownDrains: a request in flight when Shutdown starts completes
// with its full response; new connections are refused; the generation is
// closed.
func TestShutdownDrains(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	s := NewServer(slog.New(slog.NewTextHandler(io.Discard, nil)))
	release, started := make(chan struct{}), make(chan struct{}, 1)
	var closed atomic.Int32
	if err := s.Apply(slowGeneration(t, addr, release, started, &closed)); err != nil {
		t.Fatal(err)
	}
	type result struct {
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			done <- result{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- result{string(b), err}
	}()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("request never reached the handler")
	}
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	time.Sleep(50 * time.Millisecond)
	if !s.Draining() {
		t.Error("not draining during shutdown")
	}
	close(release)
	select {
	case r := <-done:
		if r.err != nil || r.body != "done" {
			t.Fatalf("in-flight request: %q %v", r.body, r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("in-flight request did not finish")
	}
	select {
	case <-shut:
	case <-time.After(5 * time.Second):
		t.Fatal("shutdown did not return")
	}
	if closed.Load() != 1 {
		t.Errorf("generation closed %d times, want 1", closed.Load())
	}
	if _, err := http.Get("http://" + addr + "/"); err == nil {
		t.Error("new connection accepted after shutdown")
	}
}

// TestRetireWaitsForInflight: a generation replaced while a request is in
// flight is closed only after that request ends.
func TestRetireWaitsForInflight(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	s := NewServer(slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer s.Shutdown(context.Background())
	release, started := make(chan struct{}), make(chan struct{}, 1)
	var closedOld, closedNew atomic.Int32
	if err := s.Apply(slowGeneration(t, addr, release, started, &closedOld)); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			done <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- string(b)
	}()
	<-started
	if err := s.Apply(slowGeneration(t, addr, release, make(chan struct{}, 8), &closedNew)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if closedOld.Load() != 0 {
		t.Fatal("old generation closed while a request was in flight")
	}
	close(release)
	if got := <-done; got != "done" {
		t.Fatalf("in-flight request across a swap: %q", got)
	}
	deadline := time.Now().Add(3 * time.Second)
	for closedOld.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if closedOld.Load() != 1 || closedNew.Load() != 0 {
		t.Fatalf("closed old=%d new=%d, want 1 0", closedOld.Load(), closedNew.Load())
	}
}
