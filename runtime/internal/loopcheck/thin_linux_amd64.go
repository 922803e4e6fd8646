//go:build linux && amd64

package loopcheck

import (
	"encoding/binary"
	"reflect"
	"runtime"
	"syscall"
	"unsafe"

	"github.com/tetratelabs/wazero"
)

const page = 4096

// Stub is an engine's check stub: one page of code, then one of data
// (the counter and the address of wazero's trampoline).
type Stub struct {
	mem []byte
}

// Thin points the loop checks of rt's compiled code at a new stub. It
// must run before rt compiles or instantiates anything. It returns nil
// when rt is not the engine this package knows; rt is then unchanged.
// The stub is freed with wazero's shared functions, when no compiled
// module of the engine is left to call it.
func Thin(rt wazero.Runtime) *Stub {
	owner, addr, ok := checkAddress(rt)
	if !ok || *addr == nil {
		return nil
	}
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil
	}
	copy(mem, code())
	binary.LittleEndian.PutUint64(mem[page:], Every)
	binary.LittleEndian.PutUint64(mem[page+8:], uint64(uintptr(unsafe.Pointer(*addr))))
	if err := syscall.Mprotect(mem[:page], syscall.PROT_READ|syscall.PROT_EXEC); err != nil {
		_ = syscall.Munmap(mem)
		return nil
	}
	*addr = &mem[0]
	runtime.AddCleanup(owner, func(mem []byte) { _ = syscall.Munmap(mem) }, mem)
	return &Stub{mem: mem}
}

// Left is how many loop iterations are left before the next exit to Go.
func (s *Stub) Left() int64 {
	return int64(binary.LittleEndian.Uint64(s.mem[page:]))
}

// code is the stub (amd64). It touches no register but the flags, so the
// jump reaches wazero's trampoline with the call's arguments, return
// address and stack exactly as the compiled code left them.
//
//	0:  sub  qword [rip+counter], 1
//	8:  jle  11
//	10: ret
//	11: mov  qword [rip+counter], Every
//	22: jmp  qword [rip+target]
func code() []byte {
	c := make([]byte, 0, 28)
	rel := func(end, target int) []byte { // rip-relative displacement from the next instruction
		return binary.LittleEndian.AppendUint32(nil, uint32(int32(target-end)))
	}
	const counter, target = page, page + 8
	c = append(c, 0x48, 0x83, 0x2d)
	c = append(c, rel(8, counter)...)
	c = append(c, 0x01)
	c = append(c, 0x7e, 0x01, 0xc3)
	c = append(c, 0x48, 0xc7, 0x05)
	c = append(c, rel(22, counter)...)
	c = binary.LittleEndian.AppendUint32(c, Every)
	c = append(c, 0xff, 0x25)
	c = append(c, rel(28, target)...)
	return c
}

// checkAddress finds the address of the check trampoline in rt's
// engine's shared functions: runtime.store.Engine (*wazevo.engine)
// .sharedFunctions.checkModuleExitCodeAddress.
// owner is the shared functions object itself.
func checkAddress(rt wazero.Runtime) (owner *byte, addr **byte, ok bool) {
	v := reflect.ValueOf(rt)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, nil, false
	}
	store := v.Elem().FieldByName("store")
	if store.Kind() != reflect.Pointer || store.IsNil() {
		return nil, nil, false
	}
	eng := store.Elem().FieldByName("Engine")
	if eng.Kind() != reflect.Interface || eng.IsNil() {
		return nil, nil, false
	}
	e := eng.Elem()
	if e.Kind() != reflect.Pointer || e.IsNil() || e.Type().Elem().PkgPath() != "github.com/tetratelabs/wazero/internal/engine/wazevo" || e.Type().Elem().Name() != "engine" {
		return nil, nil, false
	}
	sf := e.Elem().FieldByName("sharedFunctions")
	if sf.Kind() != reflect.Pointer || sf.IsNil() {
		return nil, nil, false
	}
	f := sf.Elem().FieldByName("checkModuleExitCodeAddress")
	if !f.IsValid() || f.Type() != reflect.TypeFor[*byte]() || !f.CanAddr() {
		return nil, nil, false
	}
	return (*byte)(sf.UnsafePointer()), (**byte)(unsafe.Pointer(f.UnsafeAddr())), true
}
