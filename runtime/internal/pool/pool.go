// Package pool holds the idle instances of one filter generation and the
// reference count that decides when a generation may be closed.
//
// The pool is a buffered channel, and for a pool of one instance a slot
// in front of it. Put leaves the instance in the slot when no Get waits,
// and Get takes it from there first: one atomic swap each instead of two
// channel operations and their lock, on every call of a filter with one
// instance (a server on one core). Otherwise taking an idle instance is
// one channel receive, giving it back one send; instances rotate in
// order, and waiting Gets are served in order. An instance retired while it sits idle stays there
// until someone takes it; Get skips such stale entries, and Put sweeps
// them out if the channel ever fills.
package pool

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// ErrTimeout is returned by Get when no instance became idle in time.
var ErrTimeout = errors.New("no idle instance")

// ErrClosed is returned by Get when the pool was closed while waiting.
var ErrClosed = errors.New("pool closed")

// Pool is a bounded set of idle *E.
type Pool[E any] struct {
	slot    atomic.Pointer[E] // used when useSlot
	useSlot bool
	waiting atomic.Int64 // Gets past TryGet
	idle    chan *E
	stale   func(*E) bool
	sweep   sync.Mutex
	closed  chan struct{}
	once    sync.Once
}

// New returns a pool for up to size live instances; stale reports entries
// that must be dropped instead of handed out.
func New[E any](size int, stale func(*E) bool) *Pool[E] {
	return &Pool[E]{idle: make(chan *E, 2*size+1), stale: stale, closed: make(chan struct{}), useSlot: size == 1}
}

// Get takes an idle instance, waiting at most timeout.
func (p *Pool[E]) Get(timeout time.Duration) (*E, error) {
	if v, ok := p.TryGet(); ok {
		return v, nil
	}
	// Counted as waiting, look at the slot again: a Put that saw no one
	// waiting may have filled it since (see Put).
	p.waiting.Add(1)
	defer p.waiting.Add(-1)
	if v := p.fromSlot(); v != nil {
		return v, nil
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case v := <-p.idle:
			if p.stale(v) {
				continue
			}
			return v, nil
		case <-t.C:
			return nil, ErrTimeout
		case <-p.closed:
			return nil, ErrClosed
		}
	}
}

// TryGet takes an idle instance if there is one, without waiting.
func (p *Pool[E]) TryGet() (*E, bool) {
	if v := p.fromSlot(); v != nil {
		return v, true
	}
	for {
		select {
		case v := <-p.idle:
			if p.stale(v) {
				continue
			}
			return v, true
		default:
			return nil, false
		}
	}
}

// fromSlot takes the instance in the slot, nil when there is none (or a
// stale one, which it drops).
func (p *Pool[E]) fromSlot() *E {
	if p.slot.Load() == nil { // don't write the line for nothing
		return nil
	}
	if v := p.slot.Swap(nil); v != nil && !p.stale(v) {
		return v
	}
	return nil
}

// Put gives an instance back: to the slot when the pool has one, it is
// empty and no Get waits, else to the channel. A Get that starts waiting after Put looked
// finds it in the slot (Get looks after counting itself), or Put sees it
// counted and moves the instance to the channel.
func (p *Pool[E]) Put(v *E) {
	if p.useSlot && p.waiting.Load() == 0 && p.slot.CompareAndSwap(nil, v) {
		if p.waiting.Load() == 0 {
			return
		}
		if v = p.slot.Swap(nil); v == nil { // taken meanwhile
			return
		}
	}
	p.toChannel(v)
}

func (p *Pool[E]) toChannel(v *E) {
	select {
	case p.idle <- v:
		return
	default:
	}
	// Full: stale entries are taking room. Sweep them and retry.
	p.sweep.Lock()
	defer p.sweep.Unlock()
	var keep []*E
	for {
		select {
		case e := <-p.idle:
			if !p.stale(e) {
				keep = append(keep, e)
			}
			continue
		default:
		}
		break
	}
	keep = append(keep, v)
	for _, e := range keep {
		p.idle <- e // at most 2*size+1 live entries can't exist, so this never blocks
	}
}

// Drain removes and returns every entry, stale or not.
func (p *Pool[E]) Drain() []*E {
	var all []*E
	if v := p.slot.Swap(nil); v != nil {
		all = append(all, v)
	}
	for {
		select {
		case e := <-p.idle:
			all = append(all, e)
		default:
			return all
		}
	}
}

// Close wakes up every waiting Get with ErrClosed.
func (p *Pool[E]) Close() { p.once.Do(func() { close(p.closed) }) }

// Refs is a reference count that can't be revived once it reached zero.
type Refs struct{ n atomic.Int64 }

// Init sets the count (to 1 for the owner).
func (r *Refs) Init(n int64) { r.n.Store(n) }

// Acquire takes a reference unless the count already reached zero.
func (r *Refs) Acquire() bool {
	for {
		n := r.n.Load()
		if n <= 0 {
			return false
		}
		if r.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Release drops a reference and reports whether it was the last.
func (r *Refs) Release() bool { return r.n.Add(-1) == 0 }

// Load is the current count.
func (r *Refs) Load() int64 { return r.n.Load() }
