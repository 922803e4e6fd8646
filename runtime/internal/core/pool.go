package core

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/runtime/internal/pool"
)

// Pool is the pool of one module's instances, whatever their ABI: the
// idle ones, the reference count that keeps it open while it is current
// and while calls are in flight, and the replacement of retired
// instances off the request path. I is the binding's instance type.
type Pool[I any] struct {
	// Idle holds the idle instances.
	Idle     *pool.Pool[I]
	refs     pool.Refs
	retiring atomic.Bool
	newInst  func(context.Context) (*I, error)
	shutdown func(idle []*I)
	log      *slog.Logger
}

// Init makes a pool for size live instances, with one reference (its
// owner's). stale reports an idle instance that must be skipped (retired
// while idle); newInst makes a replacement; shutdown runs once, when the
// last reference is gone, with every instance still alive (all idle
// then); log gets failed replacements.
func (p *Pool[I]) Init(size int, stale func(*I) bool, newInst func(context.Context) (*I, error), shutdown func(idle []*I), log *slog.Logger) {
	p.Idle = pool.New(size, stale)
	p.refs.Init(1)
	p.newInst, p.shutdown, p.log = newInst, shutdown, log
}

// Acquire takes a reference, unless the pool already closed.
func (p *Pool[I]) Acquire() bool { return p.refs.Acquire() }

// Release drops a reference; the last one closes the pool.
func (p *Pool[I]) Release() {
	if p.refs.Release() {
		p.Idle.Close()
		p.shutdown(p.Idle.Drain())
	}
}

// InUse is how many references others than the owner hold: the calls in
// flight on the pool (and a replacement being made), for the stats.
func (p *Pool[I]) InUse() int64 { return max(p.refs.Load()-1, 0) }

// Retire makes the pool no longer current: no more replacements, and it
// closes once the calls in flight have released it.
func (p *Pool[I]) Retire() {
	p.retiring.Store(true)
	p.Release()
}

// Retiring reports whether Retire was called.
func (p *Pool[I]) Retiring() bool { return p.retiring.Load() }

// Replace starts a fresh instance in place of a retired one, off the
// request path. It retries with backoff while the pool is current.
func (p *Pool[I]) Replace() {
	if !p.refs.Acquire() {
		return
	}
	go func() {
		defer p.Release()
		backoff := 100 * time.Millisecond
		for !p.retiring.Load() {
			inst, err := p.newInst(context.Background())
			if err == nil {
				p.Idle.Put(inst)
				return
			}
			p.log.Error("filter instance replacement failed", "err", err, "retry_in", backoff)
			time.Sleep(backoff)
			backoff = min(2*backoff, 10*time.Second)
		}
	}()
}
