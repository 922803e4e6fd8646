package snapshot

import (
	"errors"
	"reflect"
	"unsafe"

	"github.com/tetratelabs/wazero"
)

// Bare returns a CompiledModule that shares the code of compiled but
// whose instances start without the module's data segments: their
// memory is all zeros until Restore writes the snapshot into it. For a
// module with many segments that is most of what instantiation costs (a
// standard Go guest has tens of thousands: wazero evaluates the offset
// of each and copies it, for memory the snapshot overwrites anyway).
//
// Only for a module whose code neither reads nor drops a segment after
// instantiation (Code.UsesData false). The result must never be closed:
// closing it would drop the code compiled shares. It reaches into
// wazero's compiledModule and wasm.Module (a copy of each, with the copy
// of the data section left empty), written against wazero v1.12.0; it
// fails when they are not the ones it knows.
func Bare(compiled wazero.CompiledModule) (wazero.CompiledModule, error) {
	v := reflect.ValueOf(compiled)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct ||
		v.Elem().Type().Name() != "compiledModule" || v.Elem().Type().PkgPath() != "github.com/tetratelabs/wazero" {
		return nil, errors.New("unknown compiled module type")
	}
	cm := reflect.New(v.Elem().Type())
	cm.Elem().Set(v.Elem())
	mod, ok := field(cm.Elem(), "module")
	closeWith, ok2 := field(cm.Elem(), "closeWithModule")
	if !ok || !ok2 || mod.Kind() != reflect.Pointer || mod.IsNil() || mod.Elem().Kind() != reflect.Struct || closeWith.Kind() != reflect.Bool {
		return nil, errors.New("unknown compiled module layout")
	}
	m := reflect.New(mod.Elem().Type())
	m.Elem().Set(mod.Elem())
	data := m.Elem().FieldByName("DataSection")
	count := m.Elem().FieldByName("DataCountSection")
	if data.Kind() != reflect.Slice || !data.CanSet() || count.Kind() != reflect.Pointer || !count.CanSet() {
		return nil, errors.New("unknown module layout")
	}
	data.SetZero()
	count.SetZero()
	mod.Set(m)
	closeWith.SetBool(false)
	bare, ok := cm.Interface().(wazero.CompiledModule)
	if !ok {
		return nil, errors.New("unknown compiled module methods")
	}
	return bare, nil
}

// field is the field name of struct v, writable even when unexported.
func field(v reflect.Value, name string) (reflect.Value, bool) {
	f := v.FieldByName(name)
	if !f.IsValid() || !f.CanAddr() {
		return reflect.Value{}, false
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem(), true
}
