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

// TestPool_Slot: in a pool of one, an instance put back with no one
// waiting goes to the slot and comes out of it; Drain returns it too. A
// larger pool rotates its instances through the channel.
func TestPool_Slot(t *testing.T) {
	rot := New(2, func(i *item) bool { return false })
	x, y := &item{id: 1}, &item{id: 2}
	rot.Put(x)
	rot.Put(y)
	if got, _ := rot.TryGet(); got != x {
		t.Errorf("a pool of two handed out %v first, want the first put back", got)
	}
	p := New(1, func(i *item) bool { return i.stale.Load() })
	a := &item{id: 1}
	p.Put(a)
	if p.slot.Load() != a {
		t.Fatal("Put with no one waiting did not use the slot")
	}
	if got, ok := p.TryGet(); !ok || got != a {
		t.Fatalf("TryGet = %v, %v", got, ok)
	}
	p.Put(a)
	if all := p.Drain(); len(all) != 1 || all[0] != a {
		t.Errorf("Drain = %v, want the slot's instance", all)
	}
	// With a Get waiting on the channel, Put hands the instance there.
	done := make(chan *item)
	go func() { v, _ := p.Get(5 * time.Second); done <- v }()
	for p.waiting.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	p.Put(a)
	select {
	case v := <-done:
		if v != a {
			t.Errorf("waiting Get = %v", v)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a waiting Get did not get the instance put back")
	}
}

// TestPool_Handoff: goroutines take turns with one instance through Get
// and Put; none waits its timeout, so no Put leaves the instance in the
// slot while a Get waits on the channel.
func TestPool_Handoff(t *testing.T) {
	p := New(1, func(i *item) bool { return false })
	p.Put(&item{id: 1})
	const workers, rounds = 8, 2000
	errs := make(chan error, workers)
	for range workers {
		go func() {
			for range rounds {
				v, err := p.Get(5 * time.Second)
				if err != nil {
					errs <- err
					return
				}
				p.Put(v)
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatalf("Get: %v (an instance was lost to the slot)", err)
		}
	}
}
