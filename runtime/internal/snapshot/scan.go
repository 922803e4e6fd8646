package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Section ids of the Wasm binary format.
const (
	secImport = 2
	secTable  = 4
	secCode   = 10
	secData   = 11
)

// Code is what Scan found in a module's code.
type Code struct {
	// MutatesTables: the code can change a table after instantiation
	// (table.set, table.grow, table.fill, table.copy, table.init or
	// elem.drop). A snapshot does not carry tables (their entries point
	// into the instance they belong to), so such a module is not
	// snapshotted.
	MutatesTables bool
	// Data: the module has data segments. UsesData: its code reads them
	// after instantiation (memory.init or data.drop); when it does not,
	// an instance made from a snapshot is instantiated without them
	// (see Bare).
	Data, UsesData bool
}

// MutatesTables reports Scan(wasm).MutatesTables.
func MutatesTables(wasm []byte) (bool, error) {
	c, err := Scan(wasm)
	return c.MutatesTables, err
}

// Scan reads the code of wasm. A module without tables and data
// segments is not read further. It fails on a binary it can't read or an
// instruction it does not know, which callers treat as "it may".
func Scan(wasm []byte) (Code, error) {
	var c Code
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return c, errors.New("not a Wasm binary")
	}
	var code []byte
	tables := false
	b := wasm[8:]
	for len(b) > 0 {
		id := b[0]
		size, n := binary.Uvarint(b[1:])
		if n <= 0 || size > uint64(len(b)-1-n) {
			return c, errors.New("truncated section")
		}
		body := b[1+n : 1+n+int(size)]
		b = b[1+n+int(size):]
		switch id {
		case secTable:
			tables = true
		case secImport:
			imp, err := importsTable(body)
			if err != nil {
				return c, err
			}
			tables = tables || imp
		case secCode:
			code = body
		case secData:
			c.Data = len(body) > 0 && body[0] != 0 // a count of zero is one byte
		}
	}
	if !tables && !c.Data || code == nil {
		return c, nil
	}
	r := reader{b: code}
	count := r.u32()
	for i := uint32(0); i < count && r.err == nil; i++ {
		size := r.u32()
		if r.err != nil || uint64(size) > uint64(len(r.b)) {
			return c, fmt.Errorf("function %d: truncated body", i)
		}
		fn := reader{b: r.b[:size]}
		r.b = r.b[size:]
		for locals := fn.u32(); locals > 0 && fn.err == nil; locals-- {
			fn.u32()
			fn.byte()
		}
		if err := fn.instructions(&c); err != nil {
			return c, fmt.Errorf("function %d: %w", i, err)
		}
		c.MutatesTables = c.MutatesTables && tables
		if c.MutatesTables && c.UsesData {
			break
		}
	}
	return c, r.err
}

// importsTable reports whether an import section imports a table.
func importsTable(body []byte) (bool, error) {
	r := reader{b: body}
	for n := r.u32(); n > 0 && r.err == nil; n-- {
		r.name()
		r.name()
		switch kind := r.byte(); kind {
		case 0: // func: type index
			r.u32()
		case 1: // table
			return true, nil
		case 2: // memory: limits
			r.limits()
		case 3: // global: valtype, mut
			r.byte()
			r.byte()
		case 4: // tag: attribute, type index
			r.byte()
			r.u32()
		default:
			return false, fmt.Errorf("unknown import kind %#x", kind)
		}
	}
	return false, r.err
}

// instructions reads one function body's instructions into c.
func (r *reader) instructions(c *Code) error {
	var op byte
	for len(r.b) > 0 && r.err == nil {
		op = r.byte()
		switch {
		case op <= 0x01, op == 0x05, op == 0x0b, op == 0x0f, op == 0x1a, op == 0x1b,
			op >= 0x45 && op <= 0xc4, op == 0xd1:
			// no immediates
		case op >= 0x02 && op <= 0x04: // block, loop, if
			r.blockType()
		case op == 0x0c, op == 0x0d, op == 0x10, op == 0x12, op == 0xd2, // br, br_if, call, return_call, ref.func
			op >= 0x20 && op <= 0x25: // local.*, global.*, table.get
			r.u32()
		case op == 0x26: // table.set
			c.MutatesTables = true
			r.u32()
		case op == 0x0e: // br_table
			for n := r.u32(); n > 0 && r.err == nil; n-- {
				r.u32()
			}
			r.u32()
		case op == 0x11, op == 0x13: // call_indirect, return_call_indirect
			r.u32()
			r.u32()
		case op == 0x1c: // select t*
			for n := r.u32(); n > 0 && r.err == nil; n-- {
				r.byte()
			}
		case op >= 0x28 && op <= 0x3e: // loads and stores
			r.memarg()
		case op == 0x3f, op == 0x40: // memory.size, memory.grow
			r.u32()
		case op == 0x41:
			r.s64()
		case op == 0x42:
			r.s64()
		case op == 0x43:
			r.skip(4)
		case op == 0x44:
			r.skip(8)
		case op == 0xd0: // ref.null t
			r.byte()
		case op == 0xfc:
			switch sub := r.u32(); {
			case sub <= 7: // saturating truncations
			case sub == 8: // memory.init
				c.UsesData = true
				r.u32()
				r.u32()
			case sub == 9: // data.drop
				c.UsesData = true
				r.u32()
			case sub == 10: // memory.copy
				r.u32()
				r.u32()
			case sub == 11: // memory.fill
				r.u32()
			case sub == 16: // table.size
				r.u32()
			case sub == 12, sub == 14: // table.init, table.copy
				c.MutatesTables = true
				r.u32()
				r.u32()
			case sub == 13, sub == 15, sub == 17: // elem.drop, table.grow, table.fill
				c.MutatesTables = true
				r.u32()
			default:
				return fmt.Errorf("unknown instruction 0xfc %d", sub)
			}
		case op == 0xfd: // SIMD
			switch sub := r.u32(); {
			case sub <= 11, sub == 92, sub == 93: // loads, stores
				r.memarg()
			case sub == 12, sub == 13: // v128.const, i8x16.shuffle
				r.skip(16)
			case sub >= 21 && sub <= 34: // lane extract and replace
				r.byte()
			case sub >= 84 && sub <= 91: // lane loads and stores
				r.memarg()
				r.byte()
			default: // every other SIMD instruction has no immediate
			}
		case op == 0xfe: // threads
			if sub := r.u32(); sub == 3 { // atomic.fence
				r.byte()
			} else {
				r.memarg()
			}
		default:
			return fmt.Errorf("unknown instruction %#x", op)
		}
	}
	if r.err == nil && op != 0x0b {
		// Every body ends with end: a reader that lost its way between
		// instructions is caught here at the latest.
		return errors.New("body does not end with end")
	}
	return r.err
}

// reader reads the Wasm binary format; the first error sticks.
type reader struct {
	b   []byte
	err error
}

var errTruncated = errors.New("truncated")

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.err = errTruncated
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) skip(n int) {
	if len(r.b) < n {
		r.err, r.b = errTruncated, nil
		return
	}
	r.b = r.b[n:]
}

func (r *reader) u32() uint32 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > 1<<32-1 {
		r.err, r.b = errTruncated, nil
		return 0
	}
	r.b = r.b[n:]
	return uint32(v)
}

// s64 skips a signed LEB128 number of up to 64 bits (its value does not
// matter here, only where it ends).
func (r *reader) s64() {
	for i, c := range r.b {
		if i == 10 {
			break
		}
		if c < 0x80 {
			r.b = r.b[i+1:]
			return
		}
	}
	r.err, r.b = errTruncated, nil
}

func (r *reader) name() {
	n := r.u32()
	r.skip(int(n))
}

func (r *reader) limits() {
	flags := r.byte()
	r.u32()
	if flags&1 != 0 {
		r.u32()
	}
}

func (r *reader) memarg() {
	align := r.u32()
	if align&(1<<6) != 0 { // multi-memory: a memory index follows
		r.u32()
	}
	r.s64() // offset: u64 under memory64, same length rule
}

func (r *reader) blockType() {
	if len(r.b) == 0 {
		r.err = errTruncated
		return
	}
	switch c := r.b[0]; {
	case c == 0x40, c >= 0x6f && c <= 0x7f: // empty, or a value type
		r.b = r.b[1:]
	default: // a type index, s33
		r.s64()
	}
}
