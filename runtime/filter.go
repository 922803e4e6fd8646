package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// Filter runs one guest module as a pool of instances. It is safe for
// concurrent use.
type Filter struct {
	e        *Engine
	name     string
	opts     FilterOptions
	log      *slog.Logger // the runtime's own records about the filter
	guestLog *slog.Logger // what the guest logs and writes (Services.Log)
	spanName string
	nameAttr attribute.KeyValue

	cur    atomic.Pointer[modulePool]
	swapMu sync.Mutex
	pools  sync.WaitGroup // module pools not yet closed
	closed atomic.Bool

	live        atomic.Int64
	invocations atomic.Uint64
	errors      atomic.Uint64
	swaps       atomic.Uint64
	swapErrors  atomic.Uint64
	lastSwap    atomic.Int64
	startUps    atomic.Uint64
	restores    atomic.Uint64
	resets      atomic.Uint64

	watchMu sync.Mutex
	watches []func()
}

// NewFilter instantiates m into a pool of opts.PoolSize instances. It
// fails when any instance fails to start.
func (e *Engine) NewFilter(ctx context.Context, name string, m *Module, opts FilterOptions) (*Filter, error) {
	opts = opts.withDefaults()
	f := &Filter{
		e:        e,
		name:     name,
		opts:     opts,
		log:      e.log.With("filter", name),
		guestLog: e.guestLog.With("filter", name),
		spanName: "filter " + name,
		nameAttr: attribute.String("sluice.filter.name", name),
	}
	mp, err := f.newModulePool(ctx, m)
	if err != nil {
		return nil, fmt.Errorf("filter %q: %w", name, err)
	}
	f.cur.Store(mp)
	return f, nil
}

// Name is the filter's name.
func (f *Filter) Name() string { return f.name }

// Features are the features the guest enabled when it started. A request
// may enable more; see Call.Features.
func (f *Filter) Features() Features {
	if mp := f.cur.Load(); mp != nil {
		return Features(mp.features)
	}
	return 0
}

// Stats returns counters and the current module digest.
func (f *Filter) Stats() FilterStats {
	s := FilterStats{
		Name:        f.name,
		PoolSize:    f.opts.PoolSize,
		Live:        int(f.live.Load()),
		Invocations: f.invocations.Load(),
		Errors:      f.errors.Load(),
		Swaps:       f.swaps.Load(),
		SwapErrors:  f.swapErrors.Load(),
		StartUps:    f.startUps.Load(),
		Restores:    f.restores.Load(),
		Resets:      f.resets.Load(),
	}
	if mp := f.cur.Load(); mp != nil {
		s.Digest = mp.m.digest
		s.InUse = int(mp.InUse())
	}
	if t := f.lastSwap.Load(); t != 0 {
		s.LastSwap = time.Unix(0, t)
	}
	return s
}

// Swap replaces the module. The new pool is built and warmed first, off
// the request path, then swapped in atomically; calls in flight finish on
// the old pool, which is closed when its last call finishes. If the new
// module fails to start, the old one keeps serving and the error is
// returned (and logged, and counted).
func (f *Filter) Swap(ctx context.Context, m *Module) error {
	f.swapMu.Lock()
	defer f.swapMu.Unlock()
	if f.closed.Load() {
		return fmt.Errorf("filter %q: swap: %w", f.name, ErrClosed)
	}
	old := f.cur.Load()
	mp, err := f.newModulePool(ctx, m)
	if err != nil {
		f.swapErrors.Add(1)
		err = fmt.Errorf("filter %q: swap to %s: %w", f.name, m.digest, err)
		f.log.Error("filter swap failed; previous module keeps serving", "err", err)
		return err
	}
	f.cur.Store(mp)
	f.swaps.Add(1)
	f.lastSwap.Store(time.Now().UnixNano())
	if old != nil {
		old.Retire()
		f.log.Info("filter swapped", "from", old.m.digest, "to", m.digest)
	}
	return nil
}

// Close stops new calls and waits, at most until ctx is done, for calls
// in flight to finish; each pool is closed when its last call finishes,
// even after Close returned.
func (f *Filter) Close(ctx context.Context) error {
	if !f.closed.CompareAndSwap(false, true) {
		return nil
	}
	f.watchMu.Lock()
	watches := f.watches
	f.watches = nil
	f.watchMu.Unlock()
	for _, stop := range watches {
		stop()
	}
	f.swapMu.Lock()
	mp := f.cur.Swap(nil)
	f.swapMu.Unlock()
	if mp != nil {
		mp.Retire()
	}
	done := make(chan struct{})
	go func() { f.pools.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("filter %q: close: %w", f.name, ctx.Err())
	}
}

// acquire takes a reference on the current module pool.
func (f *Filter) acquire() (*modulePool, error) {
	for {
		mp := f.cur.Load()
		if mp == nil {
			return nil, ErrClosed
		}
		if mp.Acquire() {
			return mp, nil
		}
		// mp drained between Load and Acquire: a swap happened; reload.
	}
}
