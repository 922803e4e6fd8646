// Package snapshot captures the state of a wazero module instance after
// its start-up (linear memory and every mutable global, exported or not)
// and makes other instances of the same compiled module into copies of
// it, without running the start-up again.
//
// A new instance is instantiated without start functions (its memory
// then holds the data segments, its globals their initial values); Restore
// grows its memory to the snapshot's size, writes the snapshot's non-zero
// blocks, clears the blocks the data segments wrote that the start-up
// zeroed, and sets the globals. Reset does the same to an instance that
// has run since, comparing block by block and writing only what differs.
//
// Globals that the module does not export are reached through wazero's
// module instance (the exported Globals field and the Value and SetValue
// methods of its elements), by reflection, as package interrupt does;
// this was written against wazero v1.12.0, and Open fails, so that the
// caller runs the start-up as before, when those are not there. Tables
// are not captured: MutatesTables tells the modules that could change
// them, which are not snapshotted. The WASI file table is compared
// before and after the start-up (Take fails when it changed). This
// package imports nothing of sluice.
package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"

	"github.com/tetratelabs/wazero/api"
)

// block is the unit in which memory is compared, copied and cleared: an
// OS page, so that a block of zeros the snapshot does not write is a page
// a new instance never touches.
const block = 4096

var zeros [block]byte

// global is what wazero's *wasm.GlobalInstance offers.
type global interface {
	Value() (lo, hi uint64)
	SetValue(lo, hi uint64)
}

// State is one instance's state as the snapshot sees it: its memory and
// its mutable globals, found once.
type State struct {
	mod     api.Module
	globals []global
	files   reflect.Value // the WASI file table's items; invalid when unknown
}

// Open finds the state of mod. It fails when wazero's module instance is
// not the one this package knows, or when a mutable global holds a
// reference (a function reference points into its own instance).
func Open(mod api.Module) (*State, error) {
	v := reflect.ValueOf(mod)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, errors.New("unknown module instance type")
	}
	m := v.Elem()
	gs := m.FieldByName("Globals")
	src := m.FieldByName("Source")
	if gs.Kind() != reflect.Slice || src.Kind() != reflect.Pointer || src.IsNil() {
		return nil, errors.New("unknown module instance layout")
	}
	imported := src.Elem().FieldByName("ImportGlobalCount")
	if imported.Kind() != reflect.Uint32 {
		return nil, errors.New("unknown module layout")
	}
	s := &State{mod: mod}
	for i := int(imported.Uint()); i < gs.Len(); i++ {
		gv := gs.Index(i)
		if gv.Kind() != reflect.Pointer || gv.IsNil() || !gv.CanInterface() {
			return nil, errors.New("unknown global layout")
		}
		typ := gv.Elem().FieldByName("Type")
		mut, vt := typ.FieldByName("Mutable"), typ.FieldByName("ValType")
		if mut.Kind() != reflect.Bool || !vt.CanUint() {
			return nil, errors.New("unknown global type layout")
		}
		if !mut.Bool() {
			continue // set by its initializer, the same in every instance
		}
		switch vt.Uint() {
		case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b: // i32, i64, f32, f64, v128
		default:
			return nil, fmt.Errorf("mutable global %d holds a reference", i)
		}
		g, ok := gv.Interface().(global)
		if !ok {
			return nil, errors.New("unknown global methods")
		}
		s.globals = append(s.globals, g)
	}
	if sys := m.FieldByName("Sys"); sys.Kind() == reflect.Pointer && !sys.IsNil() {
		items := sys.Elem().FieldByName("fsc").FieldByName("openedFiles").FieldByName("items")
		if items.Kind() == reflect.Slice {
			s.files = items
		}
	}
	return s, nil
}

// Globals is the number of mutable globals the state covers.
func (s *State) Globals() int { return len(s.globals) }

// Pristine is an instance as instantiation left it: which blocks of its
// memory the data segments wrote, and its open files.
type Pristine struct {
	size  int
	dirty []bool
	files []uintptr
}

// Pristine records s before its start-up runs.
func (s *State) Pristine() Pristine {
	mem := s.memory()
	p := Pristine{size: len(mem), dirty: make([]bool, (len(mem)+block-1)/block), files: s.openFiles()}
	for i := range p.dirty {
		p.dirty[i] = !isZero(mem[i*block : min((i+1)*block, len(mem))])
	}
	return p
}

// openFiles identifies the entries of the WASI file table, nil when
// unknown.
func (s *State) openFiles() []uintptr {
	if !s.files.IsValid() {
		return nil
	}
	// The field is re-read: the table's slice grows by reallocation.
	items := s.files
	fds := make([]uintptr, items.Len())
	for i := range fds {
		fds[i] = items.Index(i).Pointer()
	}
	return fds
}

// Snapshot is the state of an instance after its start-up.
type Snapshot struct {
	size    int      // bytes of linear memory
	data    []byte   // the non-zero blocks, back to back
	runs    []run    // where they go
	clear   []run    // blocks the data segments wrote that are zero now
	globals []uint64 // lo, hi of each mutable global
}

// run is a range of memory; at is its offset in Snapshot.data.
type run struct{ off, len, at int }

// Size is the snapshot's linear memory in bytes.
func (sn *Snapshot) Size() int { return sn.size }

// Bytes is what the snapshot holds in memory: its non-zero blocks.
func (sn *Snapshot) Bytes() int { return len(sn.data) }

// Runs yields the non-zero runs of the snapshot's memory with their
// offsets.
func (sn *Snapshot) Runs(yield func(off int, b []byte) bool) {
	for _, r := range sn.runs {
		if !yield(r.off, sn.data[r.at:r.at+r.len]) {
			return
		}
	}
}

// UseMemory makes the snapshot read its memory from view, the whole of
// it (Size bytes, zeros included: a memory image's read-only mapping),
// instead of its own copy, which it drops.
func (sn *Snapshot) UseMemory(view []byte) {
	if len(view) != sn.size {
		panic("snapshot: view of another size")
	}
	for i := range sn.runs {
		sn.runs[i].at = sn.runs[i].off
	}
	sn.data = view
}

// Take captures s, whose state before start-up was p. It fails when the
// start-up left the WASI file table different from what instantiation
// makes (a file left open, a preopen closed or renumbered): a copy of
// the memory would then name descriptors a new instance does not have.
func (s *State) Take(p Pristine) (*Snapshot, error) {
	if now := s.openFiles(); !sameFiles(p.files, now) {
		return nil, errors.New("the start-up changed the open WASI files")
	}
	mem := s.memory()
	sn := &Snapshot{size: len(mem)}
	for off := 0; off < len(mem); off += block {
		b := mem[off:min(off+block, len(mem))]
		i := off / block
		switch {
		case !isZero(b):
			if n := len(sn.runs); n > 0 && sn.runs[n-1].off+sn.runs[n-1].len == off {
				sn.runs[n-1].len += len(b)
			} else {
				sn.runs = append(sn.runs, run{off: off, len: len(b), at: len(sn.data)})
			}
			sn.data = append(sn.data, b...)
		case i < len(p.dirty) && p.dirty[i]:
			if n := len(sn.clear); n > 0 && sn.clear[n-1].off+sn.clear[n-1].len == off {
				sn.clear[n-1].len += len(b)
			} else {
				sn.clear = append(sn.clear, run{off: off, len: len(b)})
			}
		}
	}
	sn.data = bytes.Clone(sn.data) // drop the spare capacity of append
	sn.globals = make([]uint64, 0, 2*len(s.globals))
	for _, g := range s.globals {
		lo, hi := g.Value()
		sn.globals = append(sn.globals, lo, hi)
	}
	return sn, nil
}

func sameFiles(a, b []uintptr) bool {
	// Trailing empty slots are no difference.
	for len(a) > 0 && a[len(a)-1] == 0 {
		a = a[:len(a)-1]
	}
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Restore makes s, fresh from instantiation without start functions, a
// copy of sn, which was taken from an instance of the same compiled
// module and configuration. bare says s was instantiated from Bare: its
// memory is all zeros.
func (s *State) Restore(sn *Snapshot, bare bool) error {
	if len(s.globals) != len(sn.globals)/2 {
		return errors.New("snapshot of another module")
	}
	if sn.size > 0 {
		m := s.mod.Memory()
		have := int(m.Size())
		if have > sn.size {
			return errors.New("memory larger than the snapshot's")
		}
		if have < sn.size {
			if _, ok := m.Grow(uint32((sn.size - have) / 65536)); !ok {
				return fmt.Errorf("memory can't grow to the snapshot's %d bytes", sn.size)
			}
		}
		mem := s.memory()
		for _, r := range sn.runs {
			copy(mem[r.off:r.off+r.len], sn.data[r.at:r.at+r.len])
		}
		if !bare {
			for _, r := range sn.clear {
				clear(mem[r.off : r.off+r.len])
			}
		}
	}
	s.setGlobals(sn)
	return nil
}

// Adopt makes s, whose memory is already a mapping of sn's, a copy of
// sn: it grows the memory to sn's size and sets the globals.
func (s *State) Adopt(sn *Snapshot) error {
	if len(s.globals) != len(sn.globals)/2 {
		return errors.New("snapshot of another module")
	}
	if sn.size > 0 {
		m := s.mod.Memory()
		if have := int(m.Size()); have < sn.size {
			if _, ok := m.Grow(uint32((sn.size - have) / 65536)); !ok {
				return fmt.Errorf("memory can't grow to the snapshot's %d bytes", sn.size)
			}
		}
	}
	s.setGlobals(sn)
	return nil
}

// Reset makes s, which has run since it was made from sn (or since sn
// was taken from it), a copy of sn again, writing only the blocks that
// differ. It reports false, and changes nothing, when the memory grew
// meanwhile: memory can't shrink, so the instance must be replaced.
func (s *State) Reset(sn *Snapshot) bool {
	mem := s.memory()
	if len(mem) != sn.size {
		return false
	}
	pos := 0
	for _, r := range sn.runs {
		zero(mem[pos:r.off])
		restore(mem[r.off:r.off+r.len], sn.data[r.at:r.at+r.len])
		pos = r.off + r.len
	}
	zero(mem[pos:])
	s.setGlobals(sn)
	return true
}

func (s *State) setGlobals(sn *Snapshot) {
	for i, g := range s.globals {
		g.SetValue(sn.globals[2*i], sn.globals[2*i+1])
	}
}

// memory is a view of the whole linear memory; nil when there is none.
func (s *State) memory() []byte {
	m := s.mod.Memory()
	if m == nil {
		return nil
	}
	b, _ := m.Read(0, m.Size())
	return b
}

func isZero(b []byte) bool { return bytes.Equal(b, zeros[:len(b)]) }

// zero clears the blocks of b that are not zero.
func zero(b []byte) {
	for len(b) > 0 {
		n := min(block, len(b))
		if !isZero(b[:n]) {
			clear(b[:n])
		}
		b = b[n:]
	}
}

// restore copies the blocks of src that differ from dst.
func restore(dst, src []byte) {
	for len(dst) > 0 {
		n := min(block, len(dst))
		if !bytes.Equal(dst[:n], src[:n]) {
			copy(dst[:n], src[:n])
		}
		dst, src = dst[n:], src[n:]
	}
}
