package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"

	"github.com/sluicehq/sluice/runtime/internal/core"
	"github.com/sluicehq/sluice/runtime/internal/guestlog"
	"github.com/sluicehq/sluice/runtime/internal/httpwasm"
	"github.com/sluicehq/sluice/runtime/internal/interrupt"
	"github.com/sluicehq/sluice/runtime/internal/memlimit"
	"github.com/sluicehq/sluice/runtime/internal/snapshot"
)

// instance is one module instance of the core (its module, memory cap,
// snapshot state and deadline) and the http-wasm state of its calls. mu
// is held for the whole of each guest call; handle_response waits on it
// for the instance that ran its handle_request.
type instance struct {
	core.Instance // State is nil when mp.snap is
	mu            sync.Mutex
	mp            *modulePool
	drv           httpwasm.Driver // drv.Inv is the state of its calls
	outstanding   int             // Calls waiting for handle_response
	retired       atomic.Bool
	closed        bool
}

// mono is the core's monotonic clock (nanoseconds): one clock read.
func mono() int64 { return core.Mono() }

func (inst *instance) isRetired() bool { return inst.retired.Load() }

// newInstance makes an instance from the module pool's snapshot, or runs
// the start-up when there is none.
func (mp *modulePool) newInstance(ctx context.Context) (*instance, error) {
	inst, _, err := mp.instantiate(ctx, mp.snap, false)
	return inst, err
}

// startUp makes the module pool's first instance by running the guest's
// start-up, and takes the snapshot the others are made from (mp.snap). It
// says why when it could not take one.
func (mp *modulePool) startUp(ctx context.Context) (*instance, string, error) {
	return mp.instantiate(ctx, nil, true)
}

// instantiate makes an instance from snap, or by running the start-up
// when snap is nil; then, if take, it takes the module pool's snapshot.
func (mp *modulePool) instantiate(ctx context.Context, snap *snapEntry, take bool) (*instance, string, error) {
	f := mp.f
	inst, rec, cfg := mp.prepare(snap)
	ictx, cancel := context.WithTimeout(ctx, f.opts.InitTimeout)
	defer cancel()
	ictx = memlimit.With(ictx, inst.Mem)
	ictx = httpwasm.WithInvocation(ictx, &inst.drv.Inv)
	compiled, bare := mp.m.compiled, false
	if snap != nil && mp.m.bare != nil {
		compiled, bare = mp.m.bare, true
	}
	mod, err := f.e.rt.InstantiateModule(ictx, compiled, cfg)
	if err != nil {
		return nil, "", f.setupError(mp.m.info.Start, rec.Fail(), inst, ictx, err)
	}
	inst.Mod = mod
	if err := mp.m.detachWatcher(inst); err != nil {
		_ = mod.Close(ctx)
		return nil, "", fmt.Errorf("instantiate %s: %w", mp.m.digest, err)
	}
	if snap != nil {
		if err := inst.FromSnapshot(snap.snap, snap.image, bare); err != nil {
			_ = inst.Instance.Close()
			return nil, "", fmt.Errorf("instantiate %s from its snapshot: %w", mp.m.digest, err)
		}
		inst.drv.Inv.InitFeatures = snap.features
		f.restores.Add(1)
		return mp.ready(inst, rec), "", nil
	}
	return mp.startFresh(ictx, inst, rec, take)
}

// prepare makes the instance value, not yet instantiated, with its
// invocation, memory limit and the module config it is instantiated
// with; rec holds what the guest logs while it starts.
func (mp *modulePool) prepare(snap *snapEntry) (*instance, *guestlog.Recorder, wazero.ModuleConfig) {
	f := mp.f
	inst := &instance{mp: mp}
	inst.Init(httpwasm.InvocationKey{}, &inst.drv.Inv)
	inst.drv.Inv.Config = f.opts.Config
	// What the guest logs and writes while it starts is held: logged
	// when it started, the error's own text when it failed.
	rec := guestlog.NewRecorder(f.guestLog.Handler())
	log := slog.New(rec)
	inst.drv.Inv.Logger = log
	inst.drv.Inv.MaxBuffer = f.opts.MaxBuffer
	// A host call waiting on the client or the next handler's body gives
	// up a quarter of the timeout before the deadline, which leaves the
	// guest that long to return after its body ended early.
	inst.drv.Inv.Reserve = f.opts.Timeout / 4
	inst.Mem = memlimit.New(uint64(f.opts.MemoryLimit))
	cfg := mp.cfg
	if mp.m.info.WASI && f.opts.WASI.Stdout == nil {
		cfg = cfg.WithStdout(guestlog.New(log, slog.LevelInfo, "stdout"))
	}
	if mp.m.info.WASI && f.opts.WASI.Stderr == nil {
		cfg = cfg.WithStderr(guestlog.New(log, slog.LevelWarn, "stderr"))
	}
	if snap != nil {
		inst.PrepareSnapshot(snap.snap, snap.image)
	}
	return inst, rec, cfg
}

// startFresh runs the guest's start-up on an instance instantiated
// without a snapshot and, if take, takes the module pool's snapshot
// after it; it says why when it could not take one.
func (mp *modulePool) startFresh(ictx context.Context, inst *instance, rec *guestlog.Recorder, take bool) (*instance, string, error) {
	f, mod := mp.f, inst.Mod
	why := mp.m.noSnapshot
	var err error
	if take && why == "" {
		if inst.State, err = snapshot.Open(mod); err != nil {
			why = core.NotKnown + ": " + err.Error()
		}
	}
	var pristine snapshot.Pristine
	if take && inst.State != nil {
		pristine = inst.State.Pristine()
	}
	if start := mp.m.info.Start; start != "" {
		fired, err := inst.drv.Start(&inst.Instance, mod.ExportedFunction(start), mono(), f.opts.InitTimeout)
		var exit *sys.ExitError
		switch {
		case fired:
			err = fmt.Errorf("%w after %s", ErrTimeout, f.opts.InitTimeout)
		case errors.As(err, &exit) && exit.ExitCode() == 0: // proc_exit(0): checked below
			err = nil
		}
		if err != nil {
			_ = inst.Instance.Close()
			return nil, "", f.setupError(start, rec.Fail(), inst, ictx, err)
		}
	}
	if mod.IsClosed() {
		rec.Release()
		_ = inst.Instance.Close()
		return nil, "", fmt.Errorf("instantiate %s: guest exited during %s; build it as a reactor", mp.m.digest, mp.m.info.Start)
	}
	f.startUps.Add(1)
	if take && inst.State != nil {
		sn, err := inst.State.Take(pristine)
		if err != nil {
			why = err.Error()
			inst.State = nil
		} else {
			mp.snap = mp.m.newSnapEntry(sn, inst.drv.Inv.InitFeatures)
			mp.m.keepSnapshot(mp.snapKey, mp.snap)
		}
	}
	return mp.ready(inst, rec), why, nil
}

// ready finishes an instance that started: what it logged while starting
// goes to the log, its exports are looked up, it counts as live.
func (mp *modulePool) ready(inst *instance, rec *guestlog.Recorder) *instance {
	rec.Release()
	inst.drv.Inv.Logger = mp.f.guestLog
	inst.drv.Bind(inst.Mod)
	mp.f.live.Add(1)
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
	case inst.Mem.Hit():
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
		if intr, ok := interrupt.For(inst.Mod); ok {
			intr.Detach()
			m.detached = true
		}
	})
	if !m.detached {
		return nil
	}
	intr, ok := interrupt.For(inst.Mod)
	if !ok { // a module detached by its first instance; can't happen
		return errors.New("no deadline interrupt for a module that has no deadline goroutine")
	}
	inst.Intr, inst.Detached = intr, true
	return nil
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
	if !inst.mp.Retiring() {
		inst.mp.Replace()
	}
}

func (inst *instance) closeLocked() {
	if inst.closed {
		return
	}
	inst.closed = true
	_ = inst.Instance.Close()
	inst.mp.f.live.Add(-1)
}

// close is closeLocked for an instance nobody else has seen.
func (inst *instance) close() {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	if inst.Mod == nil {
		return
	}
	inst.closeLocked()
}

// resetLocked makes inst a copy of the snapshot again and reports whether
// it can serve. An instance whose memory grew can't be (memory does not
// shrink): it is retired, and replaced from the snapshot off the request
// path.
func (inst *instance) resetLocked() bool {
	if inst.retired.Load() {
		return false
	}
	if inst.State.Reset(inst.mp.snap.snap) {
		inst.mp.f.resets.Add(1)
		return true
	}
	inst.retireLocked()
	return false
}
