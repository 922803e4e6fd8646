// Package pool holds the idle instances of one filter generation and the
// reference count that decides when a generation may be closed.
//
// The pool is a buffered channel: taking an idle instance is one channel
// receive, giving it back one send. An instance retired while it sits in
// the channel stays there until someone takes it; Get skips such stale
// entries, and Put sweeps them out if the channel ever fills.
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

// Pool is a bounded set of idle T.
type Pool[T any] struct {
	idle   chan T
	stale  func(T) bool
	sweep  sync.Mutex
	closed chan struct{}
	once   sync.Once
}

// New returns a pool for up to size live instances; stale reports entries
// that must be dropped instead of handed out.
func New[T any](size int, stale func(T) bool) *Pool[T] {
	return &Pool[T]{idle: make(chan T, 2*size+1), stale: stale, closed: make(chan struct{})}
}

// Get takes an idle instance, waiting at most timeout.
func (p *Pool[T]) Get(timeout time.Duration) (T, error) {
	if v, ok := p.TryGet(); ok {
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
			var zero T
			return zero, ErrTimeout
		case <-p.closed:
			var zero T
			return zero, ErrClosed
		}
	}
}

// TryGet takes an idle instance if there is one, without waiting.
func (p *Pool[T]) TryGet() (T, bool) {
	for {
		select {
		case v := <-p.idle:
			if p.stale(v) {
				continue
			}
			return v, true
		default:
			var zero T
			return zero, false
		}
	}
}

// Put gives an instance back.
func (p *Pool[T]) Put(v T) {
	select {
	case p.idle <- v:
		return
	default:
	}
	// Full: stale entries are taking room. Sweep them and retry.
	p.sweep.Lock()
	defer p.sweep.Unlock()
	var keep []T
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
func (p *Pool[T]) Drain() []T {
	var all []T
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
func (p *Pool[T]) Close() { p.once.Do(func() { close(p.closed) }) }

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
