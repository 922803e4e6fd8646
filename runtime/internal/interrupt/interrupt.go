// Package interrupt stops a guest call of wazero at its deadline without
// the goroutine wazero starts for every call to watch its context.
//
// RuntimeConfig.WithCloseOnContextDone(true) does two things. The
// compiler puts a check at every loop back-edge: an exit to Go that
// panics out of the guest once its module is closed (and that lets the Go
// scheduler stop the world while a guest loops). And every call starts a
// goroutine that closes the module when the call's context is done. The
// checks are what a deadline needs; the goroutine is most of the cost of
// a short call, and wazero has no option to go without it.
//
// Both hang on one flag of the compiled module. Detach clears it after
// compilation, so the compiled checks stay and the goroutine goes.
// Interrupt then does what that goroutine would have done at the
// deadline: it marks the module closed with sys.ExitCodeDeadlineExceeded,
// so that the next check makes the guest exit. Unlike wazero's goroutine
// it leaves the module's resources (its WASI files, its code) alone, so
// that Resume can put the module back in service once the interrupted
// call returned: the other requests whose handle_request ran on it then
// still get their handle_response (runtime/RATIONALE.md, "Why does a
// timeout not fail the other requests of its instance?"). Close closes an
// interrupted module for good once no call runs on it.
//
// This reads and writes fields wazero does not export. It was written
// against wazero v1.12.0's optimizing compiler; For reports false when
// the fields are not there (the interpreter, another version), and
// wazero's goroutine then stays on. The tests of the runtime package
// (TestFilter_DeadlineWithoutWatcher) fail on a wazero that breaks it.
// This package imports nothing of sluice.
package interrupt

import (
	"context"
	"encoding/binary"
	"reflect"
	"sync/atomic"
	"unsafe"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// wazero's wasm.ModuleInstance.Closed holds exitCode<<32|flag. wazero
// sets flag 1 (exitCodeFlagResourceClosed) when it closed the module and
// 2 (exitCodeFlagResourceNotClosed) when its goroutine closed it and left
// the resources to FailIfClosed, which the guest's goroutine runs at each
// check. Interrupt sets both bits, a value wazero never sets: FailIfClosed
// matches neither case and only makes the guest exit, and Resume and
// Close know the value for theirs.
const (
	flagMask              = 0xff
	flagResourceNotClosed = 1 << 1
	flagInterrupted       = 1<<0 | 1<<1
	interrupted           = uint64(sys.ExitCodeDeadlineExceeded)<<32 | flagInterrupted
	wazevoPkg             = "github.com/tetratelabs/wazero/internal/engine/wazevo"
)

// Instance interrupts one module instance.
type Instance struct {
	closed *atomic.Uint64
	watch  *bool // the compiled module's ensureTermination
}

// For returns the Instance of mod, or false when wazero's internals are
// not the ones this package knows.
func For(mod api.Module) (Instance, bool) {
	v := reflect.ValueOf(mod)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return Instance{}, false
	}
	m := v.Elem()
	closed, ok := exported[atomic.Uint64](m, "Closed")
	if !ok {
		return Instance{}, false
	}
	eng := m.FieldByName("Engine")
	if eng.Kind() != reflect.Interface || eng.IsNil() {
		return Instance{}, false
	}
	me := eng.Elem() // *wazevo.moduleEngine
	if me.Kind() != reflect.Pointer || me.IsNil() || me.Type().Elem().PkgPath() != wazevoPkg || me.Type().Elem().Name() != "moduleEngine" {
		return Instance{}, false
	}
	cm := me.Elem().FieldByName("parent") // *wazevo.compiledModule
	if cm.Kind() != reflect.Pointer || cm.IsNil() || cm.Type().Elem().Name() != "compiledModule" {
		return Instance{}, false
	}
	flag := cm.Elem().FieldByName("ensureTermination")
	if flag.Kind() != reflect.Bool || !flag.CanAddr() {
		return Instance{}, false
	}
	return Instance{closed: closed, watch: (*bool)(unsafe.Pointer(flag.UnsafeAddr()))}, true
}

// exported returns a pointer to the exported field name of T in struct v.
func exported[T any](v reflect.Value, name string) (*T, bool) {
	f := v.FieldByName(name)
	if !f.IsValid() || !f.CanAddr() || !f.CanInterface() {
		return nil, false
	}
	p, ok := f.Addr().Interface().(*T)
	return p, ok
}

// Watched reports whether wazero starts its goroutine for calls of the
// instance's compiled module.
func (i Instance) Watched() bool { return *i.watch }

// Detach stops wazero from starting its goroutine for calls of every
// instance of the instance's compiled module, present and future, until
// the compiled module is closed. It must run before any of them is
// called after instantiation (it writes what each call reads), and only
// for a module without a start section (wazero runs that inside
// InstantiateModule, where nothing else can interrupt it).
func (i Instance) Detach() {
	if *i.watch {
		*i.watch = false
	}
}

// Interrupt makes the call running on the instance fail with
// sys.ExitCodeDeadlineExceeded at its next loop back-edge or when it
// returns, and any later call fail at once. It is safe to call from any
// goroutine; it reports false when the module was already closed.
func (i Instance) Interrupt() bool {
	return i.closed.CompareAndSwap(0, interrupted)
}

// Resume undoes an Interrupt once the interrupted call returned: the
// module can be called again, with its memory, globals and resources as
// the interrupted call left them. It reports false when the module was
// not interrupted (or was closed since). No call may run on the module.
func (i Instance) Resume() bool {
	return i.closed.CompareAndSwap(interrupted, 0)
}

// Close closes mod, whose Instance is i, through wazero's public Close,
// also after an Interrupt (which, unlike Close, leaves the module known to
// the runtime and its memory referenced). No call may run on mod.
func (i Instance) Close(ctx context.Context, mod api.Module) error {
	if c := i.closed.Load(); c&flagMask == flagResourceNotClosed || c&flagMask == flagInterrupted {
		i.closed.Store(0)
		return mod.CloseWithExitCode(ctx, uint32(c>>32))
	}
	return mod.Close(ctx)
}

// HasStartSection reports whether the Wasm binary has a start section: a
// function wazero runs while instantiating. It reports true for a binary
// it can't read.
func HasStartSection(wasm []byte) bool {
	const startID = 8
	if len(wasm) < 8 {
		return true
	}
	b := wasm[8:]
	for len(b) > 0 {
		id := b[0]
		size, n := binary.Uvarint(b[1:])
		if n <= 0 || size > uint64(len(b)-1-n) {
			return true
		}
		if id == startID {
			return true
		}
		b = b[1+n+int(size):]
	}
	return false
}
