package runtime

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/runtime/internal/abi"
	"github.com/sluicehq/sluice/runtime/internal/guestlog"
	"github.com/sluicehq/sluice/runtime/internal/interrupt"
	"github.com/sluicehq/sluice/runtime/internal/memlimit"
	"github.com/sluicehq/sluice/runtime/internal/pool"
	"github.com/sluicehq/sluice/runtime/internal/snapshot"
)

// Defaults of FilterOptions.
const (
	DefaultTimeout     = time.Second
	DefaultInitTimeout = 10 * time.Second
	DefaultMemoryLimit = 256 << 20
	DefaultMaxBuffer   = 1 << 20
)

// FilterOptions configures a filter. The zero value gives the defaults.
type FilterOptions struct {
	// Config is handed to the guest by get_config (the filter's settings,
	// JSON by convention). Nil means empty.
	Config []byte
	// Timeout bounds each guest call, and the wait for an idle instance.
	// Zero means DefaultTimeout (1s).
	Timeout time.Duration
	// BodyTimeout bounds the read of the request body of a filter whose
	// guest enabled buffer_request when it started: the host reads the
	// body whole (at most MaxBuffer) before the request takes an
	// instance, and fails it with ErrRequestBodyTimeout when the client
	// has not sent it by then. Zero means Timeout.
	BodyTimeout time.Duration
	// InitTimeout bounds instantiation (_initialize or _start). Zero
	// means DefaultInitTimeout (10s).
	InitTimeout time.Duration
	// MemoryLimit caps the linear memory of each instance, in bytes,
	// rounded up to 64 KiB pages. Zero means DefaultMemoryLimit (256 MiB).
	MemoryLimit int64
	// PoolSize is the number of instances, created up front. Zero means
	// runtime.NumCPU().
	PoolSize int
	// MaxBuffer is the most body bytes the host holds for one call of the
	// guest: a request body it reads with buffer_request, or a response
	// body it reads. Reading stops one byte past it, and the request
	// fails with ErrRequestBodyTooLarge or ErrResponseBodyTooLarge. Zero
	// means DefaultMaxBuffer (1 MiB); negative means the guest may have
	// no body buffered at all (an empty one still reads).
	MaxBuffer int64
	// WASI configures guests that import wasi_snapshot_preview1.
	WASI WASIOptions
	// Reset is when an instance is made a copy of the snapshot of the
	// guest's start-up again: ResetNever (the default) or ResetRequest.
	Reset Reset
}

// WASIOptions configures what a WASI guest sees. By default it has no
// files, no environment and no arguments; its stdout and stderr go to the
// log; clocks are real and random bytes come from crypto/rand.
type WASIOptions struct {
	// Stdout and Stderr receive the guest's output. Nil means the log
	// (Info for stdout, Warn for stderr), one record per line.
	Stdout, Stderr io.Writer
	// Env is the guest's environment. Nil means empty.
	Env map[string]string
	// FS is mounted read-only at "/". Nil means no filesystem.
	FS fs.FS
}

// FilterStats is a snapshot of a filter for the admin API.
type FilterStats struct {
	Name        string
	Digest      string
	PoolSize    int
	Live        int // instances alive, every generation counted
	Invocations uint64
	Errors      uint64
	Swaps       uint64
	SwapErrors  uint64
	LastSwap    time.Time // zero until the first Swap
	// StartUps counts the instances that ran the guest's start-up
	// (_initialize or _start): one per module and config when snapshots
	// work. Restores counts the instances made from a snapshot instead,
	// Resets the in-place resets of ResetRequest.
	StartUps uint64
	Restores uint64
	Resets   uint64
}

// Filter runs one guest module as a pool of instances. It is safe for
// concurrent use.
type Filter struct {
	e        *Engine
	name     string
	opts     FilterOptions
	log      *slog.Logger
	spanName string
	nameAttr attribute.KeyValue

	cur    atomic.Pointer[generation]
	swapMu sync.Mutex
	gens   sync.WaitGroup // generations not yet closed
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
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.InitTimeout <= 0 {
		opts.InitTimeout = DefaultInitTimeout
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = opts.Timeout
	}
	if opts.MemoryLimit <= 0 {
		opts.MemoryLimit = DefaultMemoryLimit
	}
	opts.MemoryLimit = memlimit.Pages(opts.MemoryLimit) * memlimit.PageSize
	if opts.PoolSize <= 0 {
		opts.PoolSize = goruntime.NumCPU()
	}
	switch {
	case opts.MaxBuffer == 0:
		opts.MaxBuffer = DefaultMaxBuffer
	case opts.MaxBuffer < 0:
		opts.MaxBuffer = 0
	}
	f := &Filter{
		e:        e,
		name:     name,
		opts:     opts,
		log:      e.log.With("filter", name),
		spanName: "filter " + name,
		nameAttr: attribute.String("sluice.filter.name", name),
	}
	g, err := f.newGeneration(ctx, m)
	if err != nil {
		return nil, fmt.Errorf("filter %q: %w", name, err)
	}
	f.cur.Store(g)
	return f, nil
}

// Name is the filter's name.
func (f *Filter) Name() string { return f.name }

// Features are the features the guest enabled when it started. A request
// may enable more; see Call.Features.
func (f *Filter) Features() Features {
	if g := f.cur.Load(); g != nil {
		return g.features
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
	if g := f.cur.Load(); g != nil {
		s.Digest = g.m.digest
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
	g, err := f.newGeneration(ctx, m)
	if err != nil {
		f.swapErrors.Add(1)
		err = fmt.Errorf("filter %q: swap to %s: %w", f.name, m.digest, err)
		f.log.Error("filter swap failed; previous module keeps serving", "err", err)
		return err
	}
	f.cur.Store(g)
	f.swaps.Add(1)
	f.lastSwap.Store(time.Now().UnixNano())
	if old != nil {
		old.retire()
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
	g := f.cur.Swap(nil)
	f.swapMu.Unlock()
	if g != nil {
		g.retire()
	}
	done := make(chan struct{})
	go func() { f.gens.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("filter %q: close: %w", f.name, ctx.Err())
	}
}

// acquire takes a reference on the current generation.
func (f *Filter) acquire() (*generation, error) {
	for {
		g := f.cur.Load()
		if g == nil {
			return nil, ErrClosed
		}
		if g.refs.Acquire() {
			return g, nil
		}
		// g drained between Load and Acquire: a swap happened; reload.
	}
}

// generation is one module's pool. The filter holds a reference while it
// is current; every call in flight holds one too. The last release closes
// every instance.
type generation struct {
	f        *Filter
	m        *Module
	cfg      wazero.ModuleConfig
	pool     *pool.Pool[instance]
	refs     pool.Refs
	retiring atomic.Bool
	features Features
	digest   attribute.KeyValue
	// snap is the snapshot new instances are made from; nil when the
	// module can't be snapshotted (each instance runs the start-up).
	snap    *snapEntry
	snapKey string
}

func (f *Filter) newGeneration(ctx context.Context, m *Module) (*generation, error) {
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
	g := &generation{
		f:      f,
		m:      m,
		cfg:    cfg,
		digest: attribute.String("sluice.filter.digest", m.digest),
	}
	g.pool = pool.New(f.opts.PoolSize, (*instance).isRetired)
	g.refs.Init(1)
	m.retain()

	// One instance first: it runs the guest's start-up and takes the
	// snapshot, unless an earlier generation of the module with the same
	// config left one. A setup that fails (a config the guest rejects,
	// say) fails the same way in every instance, and is reported once.
	// Then the rest of the pool, in parallel, from the snapshot; any
	// failure fails the generation, with the first error.
	insts := make([]*instance, f.opts.PoolSize)
	errs := make([]error, f.opts.PoolSize)
	g.snapKey = snapKey(f.opts)
	g.snap = m.findSnapshot(g.snapKey)
	if g.snap == nil {
		var why string
		insts[0], why, errs[0] = g.startUp(ctx)
		switch {
		case errs[0] != nil:
		case g.snap == nil:
			f.log.Info("filter instances run the guest's start-up each: no snapshot", "digest", m.digest, "reason", why)
			if f.opts.Reset == ResetRequest {
				errs[0] = fmt.Errorf("reset %q needs a snapshot of the guest's start-up, and there is none: %s", f.opts.Reset, why)
				insts[0].close()
				insts[0] = nil
			}
		}
	} else {
		insts[0], errs[0] = g.newInstance(ctx)
	}
	if errs[0] == nil {
		var wg sync.WaitGroup
		for i := 1; i < len(insts); i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				insts[i], errs[i] = g.newInstance(ctx)
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
		g.releaseSnapshot()
		_ = m.Close(ctx)
		return nil, errs[i]
	}
	g.features = insts[0].inv.InitFeatures
	for _, inst := range insts {
		g.pool.Put(inst)
	}
	f.gens.Add(1)
	return g, nil
}

// retire makes g no longer current: no replacements, and it closes once
// its calls in flight finish.
func (g *generation) retire() {
	g.retiring.Store(true)
	g.release()
}

func (g *generation) release() {
	if g.refs.Release() {
		g.shutdown()
	}
}

// shutdown runs once, when the last reference is gone: every instance
// that is still alive is idle in the pool.
func (g *generation) shutdown() {
	g.pool.Close()
	for _, inst := range g.pool.Drain() {
		inst.mu.Lock()
		inst.retired.Store(true)
		inst.closeLocked()
		inst.mu.Unlock()
	}
	g.releaseSnapshot()
	_ = g.m.Close(context.Background())
	g.f.gens.Done()
}

func (g *generation) releaseSnapshot() {
	if g.snap != nil {
		g.m.releaseSnapshot(g.snapKey, g.snap)
	}
}

// replace starts a fresh instance in place of a retired one, off the
// request path. It retries with backoff while the generation is current.
func (g *generation) replace() {
	if !g.refs.Acquire() {
		return
	}
	go func() {
		defer g.release()
		backoff := 100 * time.Millisecond
		for !g.retiring.Load() {
			inst, err := g.newInstance(context.Background())
			if err == nil {
				g.pool.Put(inst)
				return
			}
			g.f.log.Error("filter instance replacement failed", "err", err, "retry_in", backoff)
			time.Sleep(backoff)
			backoff = min(2*backoff, 10*time.Second)
		}
	}()
}

// instance is one wazero module instance and the ABI state of its calls.
// mu is held for the whole of each guest call; handle_response waits on
// it for the instance that ran its handle_request.
type instance struct {
	mu          sync.Mutex
	g           *generation
	mod         api.Module
	handleReq   api.Function
	handleResp  api.Function
	inv         abi.Invocation
	ctx         callCtx
	mem         *memlimit.Memory
	intr        interrupt.Instance // valid when g.m.detached
	state       *snapshot.State    // nil when g.snap is
	dl          deadline
	done        chan struct{}
	fired       atomic.Bool
	expired     atomic.Bool // expire has run to its end
	stack       [2]uint64
	outstanding int // Calls waiting for handle_response
	retired     atomic.Bool
	closed      bool
}

func (inst *instance) isRetired() bool { return inst.retired.Load() }

// newInstance makes an instance from the generation's snapshot, or runs
// the start-up when there is none.
func (g *generation) newInstance(ctx context.Context) (*instance, error) {
	inst, _, err := g.instantiate(ctx, g.snap, false)
	return inst, err
}

// startUp makes the generation's first instance by running the guest's
// start-up, and takes the snapshot the others are made from (g.snap). It
// says why when it could not take one.
func (g *generation) startUp(ctx context.Context) (*instance, string, error) {
	return g.instantiate(ctx, nil, true)
}

// instantiate makes an instance from snap, or by running the start-up
// when snap is nil; then, if take, it takes the generation's snapshot.
func (g *generation) instantiate(ctx context.Context, snap *snapEntry, take bool) (*instance, string, error) {
	f := g.f
	inst := &instance{g: g, done: make(chan struct{})}
	inst.ctx.inst = inst
	inst.inv.Config = f.opts.Config
	// What the guest logs and writes while it starts is held: logged
	// when it started, the error's own text when it failed.
	rec := guestlog.NewRecorder(f.log.Handler())
	log := slog.New(rec)
	inst.inv.Logger = log
	inst.inv.MaxBuffer = f.opts.MaxBuffer
	// A host call waiting on the client or the next handler's body gives
	// up a quarter of the timeout before the deadline, which leaves the
	// guest that long to return after its body ended early.
	inst.inv.Reserve = f.opts.Timeout / 4
	inst.mem = memlimit.New(uint64(f.opts.MemoryLimit))
	inst.dl.init(inst.expire)

	cfg := g.cfg
	if g.m.info.WASI && f.opts.WASI.Stdout == nil {
		cfg = cfg.WithStdout(guestlog.New(log, slog.LevelInfo, "stdout"))
	}
	if g.m.info.WASI && f.opts.WASI.Stderr == nil {
		cfg = cfg.WithStderr(guestlog.New(log, slog.LevelWarn, "stderr"))
	}
	if snap != nil {
		if snap.image != nil {
			inst.mem.Map(snap.image)
		} else {
			inst.mem.Reserve(uint64(snap.snap.Size()))
		}
	}
	ictx, cancel := context.WithTimeout(ctx, f.opts.InitTimeout)
	defer cancel()
	ictx = memlimit.With(ictx, inst.mem)
	ictx = abi.WithInvocation(ictx, &inst.inv)
	compiled, bare := g.m.compiled, false
	if snap != nil && g.m.bare != nil {
		compiled, bare = g.m.bare, true
	}
	mod, err := f.e.rt.InstantiateModule(ictx, compiled, cfg)
	if err != nil {
		return nil, "", f.setupError(g.m.info.Start, rec.Fail(), inst, ictx, err)
	}
	inst.mod = mod
	if err := g.m.detachWatcher(inst); err != nil {
		_ = mod.Close(ctx)
		return nil, "", fmt.Errorf("instantiate %s: %w", g.m.digest, err)
	}
	why := g.m.noSnapshot
	if snap != nil || take && why == "" {
		inst.state, err = snapshot.Open(mod)
		if err != nil {
			why = "wazero's module instance is not the one sluice knows: " + err.Error()
		}
	}
	if snap != nil {
		switch {
		case inst.state == nil:
			err = errors.New(why)
		case snap.image != nil && inst.mem.Mapped() == nil:
			// The memory maps the snapshot's: nothing to copy. Without
			// the bare module, instantiation wrote the data segments
			// over it; those pages are dropped.
			err = inst.state.Adopt(snap.snap)
			if err == nil && !bare {
				err = inst.mem.Revert(snap.snap.Size())
			}
		default: // no image, or it could not be mapped: copy
			err = inst.state.Restore(snap.snap, bare)
		}
		if err != nil {
			_ = inst.closeModule()
			return nil, "", fmt.Errorf("instantiate %s from its snapshot: %w", g.m.digest, err)
		}
		inst.inv.InitFeatures = snap.features
		f.restores.Add(1)
		return g.ready(inst, rec), "", nil
	}
	var pristine snapshot.Pristine
	if take && inst.state != nil {
		pristine = inst.state.Pristine()
	}
	if start := g.m.info.Start; start != "" {
		err, fired := inst.call(mod.ExportedFunction(start), nil, mono(), f.opts.InitTimeout)
		var exit *sys.ExitError
		switch {
		case fired:
			err = fmt.Errorf("%w after %s", ErrTimeout, f.opts.InitTimeout)
		case errors.As(err, &exit) && exit.ExitCode() == 0: // proc_exit(0): checked below
			err = nil
		}
		if err != nil {
			_ = inst.closeModule()
			return nil, "", f.setupError(start, rec.Fail(), inst, ictx, err)
		}
	}
	if mod.IsClosed() {
		rec.Release()
		_ = inst.closeModule()
		return nil, "", fmt.Errorf("instantiate %s: guest exited during %s; build it as a reactor", g.m.digest, g.m.info.Start)
	}
	f.startUps.Add(1)
	if take && inst.state != nil {
		sn, err := inst.state.Take(pristine)
		if err != nil {
			why = err.Error()
			inst.state = nil
		} else {
			g.snap = g.m.newSnapEntry(sn, inst.inv.InitFeatures)
			g.m.keepSnapshot(g.snapKey, g.snap)
		}
	}
	return g.ready(inst, rec), why, nil
}

// ready finishes an instance that started: what it logged while starting
// goes to the log, its exports are looked up, it counts as live.
func (g *generation) ready(inst *instance, rec *guestlog.Recorder) *instance {
	rec.Release()
	inst.inv.Logger = g.f.log
	inst.handleReq = inst.mod.ExportedFunction(abi.FuncHandleRequest)
	inst.handleResp = inst.mod.ExportedFunction(abi.FuncHandleResponse)
	g.f.live.Add(1)
	return inst
}

// setupError makes the error of a failed start from what the guest
// logged and wrote while starting (held, not logged) and the cause.
func (f *Filter) setupError(start string, held []slog.Record, inst *instance, ictx context.Context, err error) error {
	err = demangleTrap(err)
	var exit *sys.ExitError
	switch {
	case errors.Is(err, ErrTimeout): // the start function's deadline fired
	case errors.Is(ictx.Err(), context.DeadlineExceeded) || errors.As(err, &exit) && exit.ExitCode() == sys.ExitCodeDeadlineExceeded:
		err = fmt.Errorf("%w after %s", ErrTimeout, f.opts.InitTimeout)
	case inst.mem.Hit():
		err = fmt.Errorf("%w (%d bytes): %w", ErrMemory, f.opts.MemoryLimit, err)
	default:
		err = fmt.Errorf("%w: %w", ErrTrap, err)
	}
	se := &SetupError{Start: start, Err: err}
	said := -1 // the record that says what went wrong
	for i, r := range held {
		if source(r) == "guest" && r.Level >= slog.LevelError {
			said = i
			break
		}
	}
	if said < 0 {
		said = slices.IndexFunc(held, func(r slog.Record) bool { return source(r) == "stderr" && r.Message != "" })
	}
	for i, r := range held {
		if i == said {
			se.Message = r.Message
		} else {
			se.Output = append(se.Output, r.Message)
		}
	}
	for len(se.Output) > 0 && strings.TrimSpace(se.Output[len(se.Output)-1]) == "" {
		se.Output = se.Output[:len(se.Output)-1]
	}
	return se
}

// source is the "source" attribute of a guest's log record: "guest" for
// the log host function, "stdout" or "stderr" for WASI output.
func source(r slog.Record) string {
	var s string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "source" {
			s = a.Value.String()
			return false
		}
		return true
	})
	return s
}

// detachWatcher turns wazero's goroutine per call off for m, once, with
// its first instance, and finds inst's interrupt. A module keeps the
// goroutine when it has a start section or wazero is not the one package
// interrupt knows.
func (m *Module) detachWatcher(inst *instance) error {
	m.detach.Do(func() {
		if m.startSection {
			return
		}
		if intr, ok := interrupt.For(inst.mod); ok {
			intr.Detach()
			m.detached = true
		}
	})
	if !m.detached {
		return nil
	}
	intr, ok := interrupt.For(inst.mod)
	if !ok { // a module detached by its first instance; can't happen
		return errors.New("no deadline interrupt for a module that has no deadline goroutine")
	}
	inst.intr = intr
	return nil
}

// expire runs when a call's deadline passes. On a detached module it
// interrupts the guest; otherwise the context wazero watches reports
// done, and wazero's goroutine closes the module.
func (inst *instance) expire() {
	if inst.fired.CompareAndSwap(false, true) {
		if inst.g.m.detached {
			inst.intr.Interrupt()
		}
		close(inst.done)
	}
	inst.expired.Store(true)
}

// closeModule closes the instance's module; it may have been interrupted.
func (inst *instance) closeModule() error {
	if inst.g.m.detached {
		return inst.intr.Close(context.Background(), inst.mod)
	}
	return inst.mod.Close(context.Background())
}

// retireLocked takes the instance out of service; it closes now if no
// Call waits for it, else when the last one finished.
func (inst *instance) retireLocked() {
	if inst.retired.Swap(true) {
		return
	}
	if inst.outstanding == 0 {
		inst.closeLocked()
	}
	if !inst.g.retiring.Load() {
		inst.g.replace()
	}
}

func (inst *instance) closeLocked() {
	if inst.closed {
		return
	}
	inst.closed = true
	inst.dl.stop()
	_ = inst.closeModule()
	inst.g.f.live.Add(-1)
}

// close is closeLocked for an instance nobody else has seen.
func (inst *instance) close() {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	if inst.mod == nil {
		return
	}
	inst.closeLocked()
}

// callCtx is the context of every guest call on an instance. It is
// allocated once per instance: its Done channel closes when the deadline
// timer fires, and it hands the host functions the instance's state.
type callCtx struct{ inst *instance }

func (c *callCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *callCtx) Done() <-chan struct{}       { return c.inst.done }
func (c *callCtx) Err() error {
	if c.inst.fired.Load() {
		return context.DeadlineExceeded
	}
	return nil
}
func (c *callCtx) Value(key any) any {
	if _, ok := key.(abi.InvocationKey); ok {
		return &c.inst.inv
	}
	return nil
}

// Call is a request that went on to the next handler after
// handle_request. Exactly one of HandleResponse or Release must follow.
type Call struct {
	f        *Filter
	g        *generation
	inst     *instance
	reqCtx   uint32
	features Features
	done     bool
}

// Features are the features in effect for this request: those enabled at
// start plus any the guest enabled in handle_request.
func (c *Call) Features() Features { return c.features }

// Continues reports whether the guest continued to the next handler: a
// Call from Request that is not the zero Call.
func (c *Call) Continues() bool { return c.inst != nil }

// HandleRequest runs the guest's handle_request. It returns a Call when
// the guest continues to the next handler, and nil (and no error) when it
// answered the request itself, in x. On error the request must be failed;
// see the Err variables for which status to answer with.
func (f *Filter) HandleRequest(x HTTP) (*Call, error) {
	c, err := f.Request(x)
	if err != nil || !c.Continues() {
		return nil, err
	}
	p := new(Call)
	*p = c
	return p, nil
}

// Request is HandleRequest returning the Call by value, so that a caller
// that keeps it in place allocates nothing (the host's chain keeps its
// calls in an array on its stack). The Call is the zero Call, whose
// Continues is false, when the guest answered the request or on error.
// A copy of a Call must not be used once one copy finished.
func (f *Filter) Request(x HTTP) (Call, error) {
	start := mono()
	g, err := f.acquire()
	if err != nil {
		return Call{}, f.finish(nil, nil, abi.PhaseRequest, OutcomeError, start, err)
	}
	span := f.startSpan(x, g, abi.PhaseRequest)
	now := start // when the guest call starts: later if it waited
	var body []byte
	held := g.features&FeatureBufferRequest != 0
	if held {
		if body, err = f.readRequestBody(x); err != nil {
			g.release()
			return Call{}, f.finish(span, g, abi.PhaseRequest, bodyOutcome(err), start, err)
		}
		now = mono()
	}
	var inst *instance
	for {
		var ok bool
		if inst, ok = g.pool.TryGet(); !ok {
			inst, err = g.pool.Get(f.opts.Timeout)
			now = mono()
		}
		if err != nil {
			g.release()
			if errors.Is(err, pool.ErrTimeout) {
				return Call{}, f.finish(span, g, abi.PhaseRequest, OutcomeOverload, start, ErrOverload)
			}
			return Call{}, f.finish(span, g, abi.PhaseRequest, OutcomeError, start, ErrClosed)
		}
		if !inst.mu.TryLock() { // a response phase runs on it
			inst.mu.Lock()
			now = mono()
		}
		if !inst.retired.Load() && !inst.mod.IsClosed() {
			break
		}
		inst.retireLocked() // retired or closed while idle; no-op when retired
		inst.mu.Unlock()
	}

	inst.inv.Begin(x, abi.PhaseRequest, g.features)
	if held {
		inst.inv.HoldRequestBody(body)
	}
	stack := inst.stack[:1]
	callErr, fired := inst.call(inst.handleReq, stack, now, f.opts.Timeout)
	ctxNext := stack[0]
	next := callErr == nil && uint32(ctxNext) != 0
	features := inst.inv.Features()
	endErr := inst.inv.End(next)
	if callErr != nil || fired {
		inst.retireLocked()
	}
	if callErr != nil {
		inst.inv.Rollback(x)
		outcome, cause := f.classify(inst, callErr, fired)
		inst.mu.Unlock()
		g.release()
		return Call{}, f.finish(span, g, abi.PhaseRequest, outcome, start, cause)
	}
	var c Call
	if next {
		inst.outstanding++
		c = Call{f: f, g: g, inst: inst, reqCtx: uint32(ctxNext >> 32), features: features}
	}
	keep := !inst.retired.Load()
	if keep && f.opts.Reset == ResetRequest {
		if next {
			keep = false // held until the request ends; see Call.end
		} else {
			keep = inst.resetLocked()
		}
	}
	inst.mu.Unlock()
	if keep {
		g.pool.Put(inst)
	}
	if endErr != nil {
		// A body read the host stopped (over max_buffer, too slow) or
		// that failed: the guest returned normally and its instance is
		// back in the pool, but the request fails.
		if c.Continues() {
			c.Release()
		} else {
			g.release()
		}
		return Call{}, f.finish(span, g, abi.PhaseRequest, bodyOutcome(endErr), start, endErr)
	}
	if !c.Continues() {
		g.release()
		f.finish(span, g, abi.PhaseRequest, OutcomeAnswered, start, nil)
		return Call{}, nil
	}
	f.finish(span, g, abi.PhaseRequest, OutcomeOK, start, nil)
	return c, nil
}

// HandleResponse runs the guest's handle_response on the instance that
// ran handle_request, after the next handler. isError tells the guest the
// next handler failed. It must be called at most once, and not after
// Release.
func (c *Call) HandleResponse(x HTTP, isError bool) error {
	f := c.f
	if c.done {
		return fmt.Errorf("filter %q: handle_response: %w", f.name, ErrCallDone)
	}
	c.done = true
	start := mono()
	span := f.startSpan(x, c.g, abi.PhaseResponse)
	inst := c.inst
	now := start // when the guest call starts: later if it waited
	if !inst.mu.TryLock() {
		inst.mu.Lock()
		now = mono()
	}
	if inst.closed || inst.mod.IsClosed() { // a timeout on another call closed it
		inst.outstanding--
		inst.retireLocked()
		if inst.outstanding == 0 {
			inst.closeLocked()
		}
		inst.mu.Unlock()
		c.g.release()
		return f.finish(span, c.g, abi.PhaseResponse, OutcomeError, start, ErrInstanceGone)
	}
	inst.inv.Begin(x, abi.PhaseResponse, c.features)
	stack := inst.stack[:2]
	stack[0] = uint64(c.reqCtx)
	stack[1] = 0
	if isError {
		stack[1] = 1
	}
	callErr, fired := inst.call(inst.handleResp, stack, now, f.opts.Timeout)
	endErr := inst.inv.End(false)
	inst.outstanding--
	if callErr != nil || fired {
		inst.retireLocked()
	}
	if inst.retired.Load() && inst.outstanding == 0 {
		inst.closeLocked()
	}
	var outcome string
	var cause error
	if callErr != nil {
		inst.inv.Rollback(x)
		outcome, cause = f.classify(inst, callErr, fired)
	}
	c.end()
	if callErr != nil {
		return f.finish(span, c.g, abi.PhaseResponse, outcome, start, cause)
	}
	if endErr != nil {
		return f.finish(span, c.g, abi.PhaseResponse, bodyOutcome(endErr), start, endErr)
	}
	f.finish(span, c.g, abi.PhaseResponse, OutcomeOK, start, nil)
	return nil
}

// Release ends a Call without running handle_response (the host gave up
// on the request). Calling it after HandleResponse does nothing.
func (c *Call) Release() {
	if c.done {
		return
	}
	c.done = true
	inst := c.inst
	inst.mu.Lock()
	inst.outstanding--
	if inst.retired.Load() && inst.outstanding == 0 {
		inst.closeLocked()
	}
	c.end()
}

// end ends the request on c's instance, whose lock the caller holds: it
// unlocks it and drops the call's reference to the generation. Under
// ResetRequest the instance, held since handle_request, is reset and goes
// back to the pool.
func (c *Call) end() {
	inst := c.inst
	keep := c.f.opts.Reset == ResetRequest && inst.resetLocked()
	inst.mu.Unlock()
	if keep {
		c.g.pool.Put(inst)
	}
	c.g.release()
}

// resetLocked makes inst a copy of the snapshot again and reports whether
// it can serve. An instance whose memory grew can't be (memory does not
// shrink): it is retired, and replaced from the snapshot off the request
// path.
func (inst *instance) resetLocked() bool {
	if inst.retired.Load() {
		return false
	}
	if inst.state.Reset(inst.g.snap.snap) {
		inst.g.f.resets.Add(1)
		return true
	}
	inst.retireLocked()
	return false
}

// classify turns a wazero error into an outcome and a cause wrapping the
// matching sentinel. Called with inst.mu held.
func (f *Filter) classify(inst *instance, err error, fired bool) (string, error) {
	err = demangleTrap(err)
	var exit *sys.ExitError
	switch {
	case fired:
		return OutcomeTimeout, fmt.Errorf("%w after %s", ErrTimeout, f.opts.Timeout)
	case errors.As(err, &exit) && exit.ExitCode() == sys.ExitCodeDeadlineExceeded:
		return OutcomeTimeout, fmt.Errorf("%w after %s", ErrTimeout, f.opts.Timeout)
	case errors.As(err, &exit) && exit.ExitCode() == sys.ExitCodeContextCanceled:
		return OutcomeError, fmt.Errorf("%w: %w", ErrClosed, err)
	case inst.mem.Hit():
		return OutcomeMemory, fmt.Errorf("%w (%d bytes): %w", ErrMemory, f.opts.MemoryLimit, err)
	}
	return OutcomeTrap, fmt.Errorf("%w: %w", ErrTrap, err)
}

// finish records an invocation: counters, observer, span, log. It returns
// err wrapped with the filter and phase, or nil.
func (f *Filter) finish(span trace.Span, g *generation, phase abi.Phase, outcome string, start int64, err error) error {
	f.invocations.Add(1)
	switch {
	case err == nil:
	case outcome == OutcomeBufferLimit || outcome == OutcomeBodyTimeout:
		// The client or the next handler is at fault, not the filter: no
		// error counted against the filter; the outcome says what
		// happened. Over max_buffer is a warning (an attack, or a limit
		// set too low); a slow client is routine.
		err = fmt.Errorf("filter %q: handle_%s: %w", f.name, phase, err)
		level := slog.LevelWarn
		msg := "filter body over max_buffer"
		if outcome == OutcomeBodyTimeout {
			level, msg = slog.LevelInfo, "filter body read timed out"
		}
		f.log.Log(context.Background(), level, msg, "phase", phase.String(), "outcome", outcome,
			"max_buffer", f.opts.MaxBuffer, "timeout", f.opts.Timeout, "err", err)
	default:
		f.errors.Add(1)
		err = fmt.Errorf("filter %q: handle_%s: %w", f.name, phase, err)
		attrs := []any{"phase", phase.String(), "outcome", outcome, "err", err}
		if g != nil {
			attrs = append(attrs, "digest", g.m.digest)
		}
		f.log.Warn("filter invocation failed", attrs...)
	}
	if f.e.obs != nil {
		f.e.obs.Invocation(f.name, phase.String(), outcome, time.Duration(mono()-start))
	}
	if span != nil {
		endSpan(span, outcome, err)
	}
	return err
}

// bodyOutcome is the outcome of a call whose body read the host stopped.
func bodyOutcome(err error) string {
	switch {
	case errors.Is(err, ErrRequestBodyTooLarge), errors.Is(err, ErrResponseBodyTooLarge):
		return OutcomeBufferLimit
	case errors.Is(err, ErrRequestBodyTimeout), errors.Is(err, ErrResponseBodyTimeout):
		return OutcomeBodyTimeout
	}
	return OutcomeError
}
