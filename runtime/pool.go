package runtime

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"slices"
	"sync"

	"github.com/tetratelabs/wazero"
	"go.opentelemetry.io/otel/attribute"

	"github.com/sluicehq/sluice/runtime/internal/core"
	"github.com/sluicehq/sluice/runtime/internal/httpwasm"
	"github.com/sluicehq/sluice/runtime/internal/memlimit"
)

// modulePool is a filter's pool of instances of one module (Swap makes
// a new one; the host's config generations are another thing): the
// core's Pool, and what instantiating the module needs. The filter holds
// a reference while it is current; every call in flight holds one too.
// The last release closes every instance.
type modulePool struct {
	core.Pool[instance]
	f        *Filter
	m        *Module
	cfg      wazero.ModuleConfig
	features httpwasm.Features
	digest   attribute.KeyValue
	// snap is the snapshot new instances are made from; nil when the
	// module can't be snapshotted (each instance runs the start-up).
	snap    *snapEntry
	snapKey string
}

func (f *Filter) newModulePool(ctx context.Context, m *Module) (*modulePool, error) {
	if _, ok := m.binding.(httpwasm.Binding); !ok { // Filter's phases are http-wasm's
		return nil, fmt.Errorf("module %s is a %s guest; a filter runs http-wasm guests", m.digest, m.binding.Name())
	}
	if need := int64(m.info.MemoryMinPages) * memlimit.PageSize; need > f.opts.MemoryLimit {
		return nil, fmt.Errorf("module %s needs %d bytes of memory at start, over the memory limit of %d", m.digest, need, f.opts.MemoryLimit)
	}
	if m.info.WASI {
		if err := f.e.ensureWASI(ctx); err != nil {
			return nil, err
		}
	}
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(crand.Reader)
	// newInstance runs the start function itself, under the instance's
	// deadline timer.
	cfg = cfg.WithStartFunctions()
	if m.info.WASI {
		// Stdout and stderr that go to the log are set per instance, in
		// newInstance, to hold what the guest writes while it starts.
		w := f.opts.WASI
		if w.Stdout != nil {
			cfg = cfg.WithStdout(w.Stdout)
		}
		if w.Stderr != nil {
			cfg = cfg.WithStderr(w.Stderr)
		}
		for k, v := range w.Env {
			cfg = cfg.WithEnv(k, v)
		}
		if w.FS != nil {
			cfg = cfg.WithFSConfig(wazero.NewFSConfig().WithFSMount(w.FS, "/"))
		}
	}
	mp := &modulePool{
		f:      f,
		m:      m,
		cfg:    cfg,
		digest: attribute.String("sluice.filter.digest", m.digest),
	}
	mp.Init(f.opts.PoolSize, (*instance).isRetired, mp.newInstance, mp.shutdown, f.log)
	m.retain()

	// One instance first: it runs the guest's start-up and takes the
	// snapshot, unless an earlier module pool of the module with the same
	// config left one. A setup that fails (a config the guest rejects,
	// say) fails the same way in every instance, and is reported once.
	// Then the rest of the pool, in parallel, from the snapshot; any
	// failure fails the module pool, with the first error.
	insts := make([]*instance, f.opts.PoolSize)
	errs := make([]error, f.opts.PoolSize)
	mp.snapKey = snapKey(f.opts)
	mp.snap = m.findSnapshot(mp.snapKey)
	if mp.snap == nil {
		var why string
		insts[0], why, errs[0] = mp.startUp(ctx)
		switch {
		case errs[0] != nil:
		case mp.snap == nil:
			f.log.Info("filter instances run the guest's start-up each: no snapshot", "digest", m.digest, "reason", why)
			if f.opts.Reset == ResetRequest {
				errs[0] = fmt.Errorf("reset %q needs a snapshot of the guest's start-up, and there is none: %s", f.opts.Reset, why)
				insts[0].close()
				insts[0] = nil
			}
		}
	} else {
		insts[0], errs[0] = mp.newInstance(ctx)
	}
	if errs[0] == nil {
		var wg sync.WaitGroup
		for i := 1; i < len(insts); i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				insts[i], errs[i] = mp.newInstance(ctx)
			}()
		}
		wg.Wait()
	}
	if i := slices.IndexFunc(errs, func(err error) bool { return err != nil }); i >= 0 {
		for _, inst := range insts {
			if inst != nil {
				inst.close()
			}
		}
		mp.releaseSnapshot()
		_ = m.Close(ctx)
		return nil, errs[i]
	}
	mp.features = insts[0].drv.Inv.InitFeatures
	for _, inst := range insts {
		mp.Idle.Put(inst)
	}
	f.pools.Add(1)
	return mp, nil
}

// shutdown runs once, when the last reference is gone: every instance
// that is still alive is idle in the pool.
func (mp *modulePool) shutdown(idle []*instance) {
	for _, inst := range idle {
		inst.mu.Lock()
		inst.retired.Store(true)
		inst.closeLocked()
		inst.mu.Unlock()
	}
	mp.releaseSnapshot()
	_ = mp.m.Close(context.Background())
	mp.f.pools.Done()
}

func (mp *modulePool) releaseSnapshot() {
	if mp.snap != nil {
		mp.m.releaseSnapshot(mp.snapKey, mp.snap)
	}
}
