package core

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/sluicehq/sluice/runtime/internal/interrupt"
	"github.com/sluicehq/sluice/runtime/internal/memlimit"
	"github.com/sluicehq/sluice/runtime/internal/snapshot"
)

// Instance is one wazero module instance and what a call on it needs
// whatever the ABI: its memory cap, its snapshot state, the deadline of
// each call and the interrupt that enforces it, and the context every
// call runs under, which hands the binding its per-instance state. It
// knows nothing of an ABI's exports or of request phases; a binding
// drives its calls. Calls on one Instance must not overlap (the caller
// holds a lock from before Call until after it returned).
type Instance struct {
	// Mod is the module instance; nil until instantiated.
	Mod api.Module
	// Mem caps the instance's linear memory (given to instantiation
	// through memlimit.With).
	Mem *memlimit.Memory
	// Intr interrupts the guest at its deadline; valid when Detached.
	Intr interrupt.Instance
	// Detached: wazero starts no goroutine per call for the module (see
	// package interrupt); Intr stops it, and Resume can bring it back.
	// Otherwise wazero closes the module when a call's context is done.
	Detached bool
	// State reads and writes the instance's memory and globals for a
	// snapshot; nil when the module can't be snapshotted.
	State *snapshot.State

	dl      deadline
	done    chan struct{}
	fired   atomic.Bool
	expired atomic.Bool // expire has run to its end
	ctx     callCtx
	key     any // the binding's context key, and what it gives
	val     any
}

// Init prepares i for its first call: ctx.Value(key) gives val during
// every call (a binding's per-instance state).
func (i *Instance) Init(key, val any) {
	i.done = make(chan struct{})
	i.ctx.i = i
	i.key, i.val = key, val
	i.dl.init(i.expire)
}

// Call runs fn with a deadline timeout from now (Mono). It reports
// whether the deadline fired. The timer is the instance's own and usually
// already armed, so a call allocates nothing, starts no goroutine, and
// takes no lock (runtime/RATIONALE.md). A call the deadline stopped
// leaves the instance callable again where it can be (see resume): the
// caller decides whether to use it.
func (i *Instance) Call(fn api.Function, stack []uint64, now int64, timeout time.Duration) (fired bool, err error) {
	at := i.dl.begin(now, timeout)
	err = fn.CallWithStack(&i.ctx, stack)
	if i.dl.end(at) {
		return false, err
	}
	// expire has started: let it finish, so that nothing touches the
	// module once the caller closes it.
	for !i.expired.Load() {
		goruntime.Gosched()
	}
	i.resume()
	return true, err
}

// expire runs when a call's deadline passes. On a detached module it
// interrupts the guest; otherwise the context wazero watches reports
// done, and wazero's goroutine closes the module.
func (i *Instance) expire() {
	if i.fired.CompareAndSwap(false, true) {
		if i.Detached {
			i.Intr.Interrupt()
		}
		close(i.done)
	}
	i.expired.Store(true)
}

// resume puts an instance whose call the deadline stopped back in a state
// where it can be called again, so that the requests whose first phase
// ran on it still get their second there (runtime/RATIONALE.md, "Why
// does a timeout not fail the other requests of its instance?"). Only a
// detached module can be: wazero's own goroutine closes the module for
// good. Called after expire finished, before the next call arms the
// timer.
func (i *Instance) resume() {
	if !i.Detached || !i.Intr.Resume() {
		return
	}
	i.fired.Store(false)
	i.expired.Store(false)
	i.done = make(chan struct{})
}

// Close stops the deadline timer and closes the module, which may have
// been interrupted. No call may run on it.
func (i *Instance) Close() error {
	i.dl.stop()
	if i.Detached {
		return i.Intr.Close(context.Background(), i.Mod)
	}
	return i.Mod.Close(context.Background())
}

// callCtx is the context of every guest call on an instance. It is
// allocated once per instance: its Done channel closes when the deadline
// timer fires, and it hands the host functions the binding's state.
type callCtx struct{ i *Instance }

func (c *callCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

func (c *callCtx) Done() <-chan struct{} { return c.i.done }

func (c *callCtx) Err() error {
	if c.i.fired.Load() {
		return context.DeadlineExceeded
	}
	return nil
}

func (c *callCtx) Value(key any) any {
	if key == c.i.key {
		return c.i.val
	}
	return nil
}

// NotKnown says why a module instance can't be snapshotted when wazero's
// internals are not the ones package snapshot reads.
const NotKnown = "wazero's module instance is not the one sluice knows"

// PrepareSnapshot readies the memory cap of an instance about to be
// instantiated from sn: the memory maps image (copy-on-write) where there
// is one, else sn's size is reserved for the copy. Call it before
// instantiating, with Mem set.
func (i *Instance) PrepareSnapshot(sn *snapshot.Snapshot, image *memlimit.Image) {
	if image != nil {
		i.Mem.Map(image)
	} else {
		i.Mem.Reserve(uint64(sn.Size()))
	}
}

// FromSnapshot makes the instance, just instantiated (from the module
// without its data segments when bare), a copy of sn: nothing to copy
// when its memory maps sn's image, else sn's memory and globals are
// copied in. On error the caller closes the instance.
func (i *Instance) FromSnapshot(sn *snapshot.Snapshot, image *memlimit.Image, bare bool) error {
	var err error
	if i.State, err = snapshot.Open(i.Mod); err != nil {
		return fmt.Errorf("%s: %w", NotKnown, err)
	}
	if image != nil && i.Mem.Mapped() == nil {
		// The memory maps the snapshot's: nothing to copy. Without the
		// bare module, instantiation wrote the data segments over it;
		// those pages are dropped.
		if err := i.State.Adopt(sn); err != nil || bare {
			return err
		}
		return i.Mem.Revert(sn.Size())
	}
	// No image, or it could not be mapped: copy.
	return i.State.Restore(sn, bare)
}
