package tlsconf

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/acme/autocert"

	"github.com/sluicehq/sluice/host/tlsconf/tlstest"
)

// memStore is a Storage and a Locker in memory: what two instances
// sharing one Redis see.
type memStore struct {
	mu    sync.Mutex
	data  map[string][]byte
	locks map[string]string
	n     int
}

func newMemStore() *memStore {
	return &memStore{data: map[string][]byte{}, locks: map[string]string{}}
}

func (s *memStore) Get(_ context.Context, k string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.data[k]; ok {
		return d, nil
	}
	return nil, autocert.ErrCacheMiss
}

func (s *memStore) Put(_ context.Context, k string, d []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data[k] = d
	return nil
}

func (s *memStore) Delete(_ context.Context, k string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.data, k)
	return nil
}

func (s *memStore) TryLock(_ context.Context, name string, _ time.Duration) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, held := s.locks[name]; held {
		return "", false, nil
	}
	s.n++
	tok := strconv.Itoa(s.n)
	s.locks[name] = tok
	return tok, true, nil
}

func (s *memStore) Unlock(_ context.Context, name, tok string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.locks[name] == tok {
		delete(s.locks, name)
	}
	return nil
}

func certPEM(t *testing.T, ca *tlstest.CA, notAfter time.Time) []byte {
	p := ca.ServerUntil(t, notAfter, "a.test")
	return append(append([]byte{}, p.KeyPEM...), p.CertPEM...)
}

func TestSharedCacheOneOrderer(t *testing.T) {
	st := newMemStore()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := &sharedCache{inner: st, lock: st, log: log}
	b := &sharedCache{inner: st, lock: st, log: log}
	ctx := context.Background()

	// No certificate: a takes the lock and is told to order; b is told
	// that someone else is ordering.
	if _, err := a.Get(ctx, "a.test"); !errors.Is(err, autocert.ErrCacheMiss) {
		t.Fatalf("first instance: %v, want a cache miss (order)", err)
	}
	if _, err := b.Get(ctx, "a.test"); !errors.Is(err, errOrderedElsewhere) {
		t.Fatalf("second instance: %v, want errOrderedElsewhere", err)
	}
	if !a.holdsName("a.test") || b.holdsName("a.test") {
		t.Fatal("the lock is not a's alone")
	}
	// a's retry (after a failed order) orders again: the lock is its own.
	if _, err := a.Get(ctx, "a.test"); !errors.Is(err, autocert.ErrCacheMiss) {
		t.Fatalf("first instance again: %v, want a cache miss", err)
	}
	// The stored certificate releases the lock and b reads it.
	ca := tlstest.NewCA(t, tlstest.ECDSA)
	fresh := certPEM(t, ca, time.Now().Add(90*24*time.Hour))
	if err := a.Put(ctx, "a.test", fresh); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	_, held := st.locks["acme:a.test"]
	st.mu.Unlock()
	if held {
		t.Fatal("Put left the lock held")
	}
	if got, err := b.Get(ctx, "a.test"); err != nil || string(got) != string(fresh) {
		t.Fatalf("second instance after the order: %v", err)
	}
	// Challenge answers pass straight through.
	if _, err := b.Get(ctx, "tok+http-01"); !errors.Is(err, autocert.ErrCacheMiss) {
		t.Fatalf("token: %v", err)
	}
}

func TestSharedCacheRenewalOnce(t *testing.T) {
	st := newMemStore()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := &sharedCache{inner: st, lock: st, log: log}
	b := &sharedCache{inner: st, lock: st, log: log}
	ctx := context.Background()
	ca := tlstest.NewCA(t, tlstest.ECDSA)
	// Issued an hour ago, expiring in 20 minutes: due in its last third.
	old := certPEM(t, ca, time.Now().Add(20*time.Minute))
	st.Put(ctx, "a.test", old)
	if _, err := a.Get(ctx, "a.test"); !errors.Is(err, autocert.ErrCacheMiss) {
		t.Fatalf("due certificate, first instance: %v, want a miss (renew)", err)
	}
	// b waits for a's renewal instead of renewing too.
	got := make(chan []byte, 1)
	go func() {
		d, err := b.Get(ctx, "a.test")
		if err != nil {
			t.Error(err)
		}
		got <- d
	}()
	select {
	case <-got:
		t.Fatal("second instance did not wait for the renewal")
	case <-time.After(300 * time.Millisecond):
	}
	renewed := certPEM(t, ca, time.Now().Add(90*24*time.Hour))
	a.Put(ctx, "a.test", renewed)
	select {
	case d := <-got:
		if string(d) != string(renewed) {
			t.Fatal("second instance got the old certificate")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("second instance still waiting after the renewal")
	}
}

func TestOrderNames(t *testing.T) {
	payload := base64.RawURLEncoding.EncodeToString([]byte(`{"identifiers":[{"type":"dns","value":"a.test"},{"type":"dns","value":"b.test"}]}`))
	jws := []byte(`{"protected":"x","payload":"` + payload + `","signature":"y"}`)
	got := orderNames(jws)
	if len(got) != 2 || got[0] != "a.test" || got[1] != "b.test" {
		t.Fatalf("orderNames = %v", got)
	}
	if orderNames([]byte("not json")) != nil {
		t.Fatal("garbage has names")
	}
}
