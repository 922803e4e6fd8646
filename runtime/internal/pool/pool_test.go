package pool

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

type item struct {
	id    int
	stale atomic.Bool
}

func TestPool(t *testing.T) {
	p := New(2, func(i *item) bool { return i.stale.Load() })
	a, b := &item{id: 1}, &item{id: 2}
	p.Put(a)
	p.Put(b)
	a.stale.Store(true) // retired while idle
	got, err := p.Get(time.Second)
	if err != nil || got != b {
		t.Fatalf("Get = %v, %v; want b (a is stale)", got, err)
	}
	if _, err := p.Get(10 * time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Errorf("empty Get = %v", err)
	}
	// Fill with stale entries past capacity: Put sweeps them.
	for i := range 10 {
		s := &item{id: 10 + i}
		s.stale.Store(true)
		p.Put(s)
	}
	p.Put(b)
	if got, _ := p.Get(time.Second); got != b {
		t.Errorf("Get after sweep = %v", got)
	}
	done := make(chan error)
	go func() { _, err := p.Get(time.Minute); done <- err }()
	p.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Errorf("Get on close = %v", err)
	}
}

func TestRefs(t *testing.T) {
	var r Refs
	r.Init(1)
	if !r.Acquire() || r.Release() || !r.Release() {
		t.Fatal("counting")
	}
	if r.Acquire() {
		t.Error("revived at zero")
	}
}
