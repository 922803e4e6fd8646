package store

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/sluicehq/sluice/host/tlsconf/tlstest"
)

func newStore(t *testing.T) (*Store, *miniredis.Miniredis) {
	t.Helper()
	m := miniredis.RunT(t)
	s, err := Open(Options{Address: m.Addr(), Prefix: t.Name() + ":", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s, m
}

func TestOpenSharesOnePool(t *testing.T) {
	o := Options{Address: "127.0.0.1:1", Prefix: "x:"}
	a, _ := Open(o)
	b, _ := Open(o)
	o.Prefix = "y:"
	c, _ := Open(o)
	if a != b || a == c {
		t.Fatalf("same options share a store, others do not: %p %p %p", a, b, c)
	}
}

func TestTakeBurstThenWait(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	tests := []struct {
		want, got int
	}{
		{want: 3, got: 3}, // of a burst of 5
		{want: 3, got: 2},
		{want: 1, got: 0},
	}
	for i, tt := range tests {
		got, wait, err := s.Take(ctx, "k", 1, 5, tt.want)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.got {
			t.Fatalf("take %d: got %d tokens, want %d", i, got, tt.got)
		}
		if got == 0 && (wait <= 0 || wait > time.Second) {
			t.Fatalf("take %d: wait %v, want within (0, 1s]", i, wait)
		}
	}
	// Another key has its own bucket.
	if got, _, _ := s.Take(ctx, "other", 1, 5, 5); got != 5 {
		t.Fatalf("other key: got %d, want 5", got)
	}
}

func TestBlobs(t *testing.T) {
	s, m := newStore(t)
	ctx := context.Background()
	if _, err := s.Get(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get of nothing: %v, want ErrNotFound", err)
	}
	if err := s.Put(ctx, "a", []byte("cert")); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Get(t.Name() + ":a"); got != "cert" {
		t.Fatalf("stored %q under the prefix, want cert", got)
	}
	if b, err := s.Get(ctx, "a"); err != nil || string(b) != "cert" {
		t.Fatalf("get: %q %v", b, err)
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
}

func TestLock(t *testing.T) {
	s, m := newStore(t)
	ctx := context.Background()
	tok, ok, err := s.TryLock(ctx, "order:a", time.Minute)
	if err != nil || !ok {
		t.Fatalf("first lock: %v %v", ok, err)
	}
	if _, ok, _ := s.TryLock(ctx, "order:a", time.Minute); ok {
		t.Fatal("a held lock was taken twice")
	}
	// A stale holder (wrong token) cannot free another's lock.
	if err := s.Unlock(ctx, "order:a", "not-the-token"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.TryLock(ctx, "order:a", time.Minute); ok {
		t.Fatal("unlock with a wrong token freed the lock")
	}
	if err := s.Unlock(ctx, "order:a", tok); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.TryLock(ctx, "order:a", time.Minute); !ok {
		t.Fatal("unlock with the token left the lock")
	}
	// Expiry frees a lock whose holder went away.
	if _, ok, _ := s.TryLock(ctx, "order:b", time.Second); !ok {
		t.Fatal("lock b")
	}
	m.FastForward(2 * time.Second)
	if _, ok, _ := s.TryLock(ctx, "order:b", time.Second); !ok {
		t.Fatal("an expired lock was not free")
	}
}

func TestErrorsCounted(t *testing.T) {
	s, m := newStore(t)
	m.Close()
	before := Errors(OpRateLimit)
	if _, _, err := s.Take(context.Background(), "k", 1, 1, 1); err == nil {
		t.Fatal("take from a stopped server succeeded")
	}
	if Errors(OpRateLimit) != before+1 {
		t.Fatalf("errors %d, want %d", Errors(OpRateLimit), before+1)
	}
}

func TestDeadline(t *testing.T) {
	// A server that accepts and never answers: the call ends at the
	// store's timeout, not later.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	s, _ := Open(Options{Address: ln.Addr().String(), Prefix: "slow:", Timeout: 50 * time.Millisecond})
	start := time.Now()
	if _, _, err := s.Take(context.Background(), "k", 1, 1, 1); err == nil {
		t.Fatal("take from a stalled server succeeded")
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("call took %v with a 50ms timeout", d)
	}
}

func TestAuthAndTLS(t *testing.T) {
	ca := tlstest.NewCA(t, tlstest.ECDSA)
	srv := ca.Server(t, "127.0.0.1")
	m, err := miniredis.RunTLS(&tls.Config{Certificates: []tls.Certificate{srv.TLS(t)}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.RequireUserAuth("sluice", "s3cret")
	dir := t.TempDir()
	caPath := dir + "/ca.pem"
	if err := os.WriteFile(caPath, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		user, pw string
		tls      *TLSOptions
		ok       bool
	}{
		{"tls and the right password", "sluice", "s3cret", &TLSOptions{CA: caPath}, true},
		{"a wrong password", "sluice", "nope", &TLSOptions{CA: caPath}, false},
		{"an untrusted server", "sluice", "s3cret", &TLSOptions{}, false},
		{"plain TCP to a TLS server", "sluice", "s3cret", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(Options{Address: m.Addr(), Username: tt.user, Password: tt.pw, TLS: tt.tls, Prefix: "auth:", Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			err = s.Ping(context.Background())
			if (err == nil) != tt.ok {
				t.Fatalf("ping: %v, want ok=%v", err, tt.ok)
			}
			if err != nil && strings.Contains(err.Error(), tt.pw) {
				t.Fatalf("the error shows the password: %v", err)
			}
		})
	}
}

func TestBlobCallsRetried(t *testing.T) {
	s, m := newStore(t)
	m.Close()
	before := Errors(OpACME)
	if _, err := s.Get(context.Background(), "a"); err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("get from a stopped server: %v", err)
	}
	if got := Errors(OpACME) - before; got != acmeAttempts {
		t.Fatalf("%d failures counted, want one per attempt (%d)", got, acmeAttempts)
	}
}

// TestStateLoggedOnce: connecting, losing the server and finding it
// again are logged once each, however many calls see them, through the
// logger sluice gives; Check follows the server.
func TestStateLoggedOnce(t *testing.T) {
	var buf strings.Builder
	var mu sync.Mutex
	SetLog(slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, nil)))
	defer SetLog(nil)
	m := miniredis.RunT(t)
	s, err := Open(Options{Address: m.Addr(), Prefix: t.Name() + ":", Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	take := func(n int) {
		for range n {
			s.Take(ctx, "k", 100, 100, 1)
		}
	}
	take(3)
	if !s.Check(ctx) {
		t.Error("Check: the server answers, want true")
	}
	m.Close()
	take(3)
	s.checked.Store(0) // as a second later
	if s.Check(ctx) {
		t.Error("Check: the server is gone, want false")
	}
	if err := m.Restart(); err != nil {
		t.Fatal(err)
	}
	take(3)
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	for _, want := range []string{"store: connected", "store: lost", "store: answering again"} {
		if n := strings.Count(out, want); n != 1 {
			t.Errorf("%q logged %d times, want once:\n%s", want, n, out)
		}
	}
	if strings.Count(out, "\n") != 3 {
		t.Errorf("want three lines:\n%s", out)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
