//go:build linux && amd64

package loopcheck

import (
	"context"
	"encoding/binary"
	"reflect"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

const (
	wazevoPkg = "github.com/tetratelabs/wazero/internal/engine/wazevo"
	// counterField is the field of wazevo's executionContext that holds
	// the counter. It is the address of the memory.atomic.wait32
	// trampoline, which no code of a runtime without the threads feature
	// can call (such code does not validate).
	counterField = "memoryWait32TrampolineAddress"
	// counterInit is the field of wazevo's sharedFunctions that each new
	// call engine copies into counterField.
	counterInit = "memoryWait32Address"
	// threads is api.CoreFeatures' experimental threads feature.
	threads = api.CoreFeatureSIMD << 1
)

// Thin points the loop checks of rt's compiled code at a new stub. It
// must run before rt compiles or instantiates anything. It reports false
// when rt is not the engine this package knows (or has the threads
// feature); rt is then unchanged. The stub is freed with wazero's shared
// functions, when no compiled module of the engine is left to call it.
func Thin(rt wazero.Runtime) bool {
	sf, ok := sharedFunctions(rt)
	if !ok {
		return false
	}
	check := field[*byte](sf, "checkModuleExitCodeAddress")
	wait := field[*byte](sf, counterInit)
	if check == nil || wait == nil || *check == nil {
		return false
	}
	off, ok := counterOffset()
	if !ok {
		return false
	}
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return false
	}
	copy(mem, code(off))
	binary.LittleEndian.PutUint64(mem[page:], uint64(uintptr(unsafe.Pointer(*check))))
	if err := syscall.Mprotect(mem[:page], syscall.PROT_READ|syscall.PROT_EXEC); err != nil {
		_ = syscall.Munmap(mem)
		return false
	}
	*check = &mem[0]
	// Every call engine made from now on starts its count at Every. A
	// small integer in a pointer field is safe from the Go GC: it points
	// into no heap arena.
	*(*uintptr)(unsafe.Pointer(wait)) = Every
	runtime.AddCleanup((*byte)(sf.Addr().UnsafePointer()), func(mem []byte) { _ = syscall.Munmap(mem) }, mem)
	return true
}

const page = 4096

// code is the stub (amd64). wazevo passes the execution context in rax
// (the first integer argument); the stub touches no register but the
// flags, so the jump reaches wazero's trampoline with the call's
// arguments, return address and stack exactly as the compiled code left
// them.
//
//	0:  sub  qword [rax+off], 1
//	8:  jle  11
//	10: ret
//	11: mov  qword [rax+off], Every
//	22: jmp  qword [rip+target]   ; the data page
func code(off uint32) []byte {
	c := []byte{0x48, 0x83, 0xa8}
	c = binary.LittleEndian.AppendUint32(c, off)
	c = append(c, 0x01, 0x7e, 0x01, 0xc3, 0x48, 0xc7, 0x80)
	c = binary.LittleEndian.AppendUint32(c, off)
	c = binary.LittleEndian.AppendUint32(c, Every)
	c = append(c, 0xff, 0x25)
	return binary.LittleEndian.AppendUint32(c, uint32(page-28)) // rip is 28 after the jmp
}

// sharedFunctions finds rt's engine's shared functions:
// runtime.store.Engine (*wazevo.engine).sharedFunctions, and checks that
// rt has no threads.
func sharedFunctions(rt wazero.Runtime) (reflect.Value, bool) {
	v := reflect.ValueOf(rt)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	if f := field[api.CoreFeatures](v.Elem(), "enabledFeatures"); f == nil || *f&threads != 0 {
		return reflect.Value{}, false
	}
	store := v.Elem().FieldByName("store")
	if store.Kind() != reflect.Pointer || store.IsNil() {
		return reflect.Value{}, false
	}
	eng := store.Elem().FieldByName("Engine")
	if eng.Kind() != reflect.Interface || eng.IsNil() {
		return reflect.Value{}, false
	}
	e := eng.Elem()
	if e.Kind() != reflect.Pointer || e.IsNil() || e.Type().Elem().PkgPath() != wazevoPkg || e.Type().Elem().Name() != "engine" {
		return reflect.Value{}, false
	}
	sf := e.Elem().FieldByName("sharedFunctions")
	if sf.Kind() != reflect.Pointer || sf.IsNil() {
		return reflect.Value{}, false
	}
	return sf.Elem(), true
}

// field returns a pointer to the field name of struct v when it has type
// T, else nil.
func field[T any](v reflect.Value, name string) *T {
	f := v.FieldByName(name)
	if !f.IsValid() || f.Type() != reflect.TypeFor[T]() || !f.CanAddr() {
		return nil
	}
	return (*T)(unsafe.Pointer(f.UnsafeAddr()))
}

// counterOffset is the offset of counterField in wazevo's
// executionContext, read once from the type of a call engine of a
// throwaway runtime (the type is reachable only through a value).
var counterOffset = sync.OnceValues(func() (uint32, bool) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer rt.Close(ctx)
	mod, err := rt.Instantiate(ctx, nop)
	if err != nil {
		return 0, false
	}
	fn := reflect.ValueOf(mod.ExportedFunction("f"))
	if fn.Kind() != reflect.Pointer || fn.Type().Elem().PkgPath() != wazevoPkg || fn.Type().Elem().Name() != "callEngine" {
		return 0, false
	}
	ec, ok := fn.Type().Elem().FieldByName("execCtx")
	if !ok || ec.Type.Kind() != reflect.Struct {
		return 0, false
	}
	f, ok := ec.Type.FieldByName(counterField)
	if !ok || f.Type != reflect.TypeFor[*byte]() || f.Offset > 1<<20 {
		return 0, false
	}
	return uint32(f.Offset), true
})

// nop is (module (func (export "f"))).
var nop = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
	0x01, 0x04, 0x01, 0x60, 0x00, 0x00,
	0x03, 0x02, 0x01, 0x00,
	0x07, 0x05, 0x01, 0x01, 'f', 0x00, 0x00,
	0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b,
}

// Left is how many loop iterations fn, a function of a thinned runtime,
// has left before its next exit to Go (for tests); -1 when fn is not a
// call engine this package knows.
func Left(fn api.Function) int64 {
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Pointer || v.Type().Elem().Name() != "callEngine" {
		return -1
	}
	p := field[*byte](v.Elem().FieldByName("execCtx"), counterField)
	if p == nil {
		return -1
	}
	return int64(*(*uintptr)(unsafe.Pointer(p)))
}
