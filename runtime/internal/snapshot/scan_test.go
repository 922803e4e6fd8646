package snapshot

import (
	"os"
	"path/filepath"
	"testing"
)

// module is a binary with one function whose body is code (without its
// final end), and a table when table is true.
func module(table bool, code ...byte) []byte {
	b := []byte("\x00asm\x01\x00\x00\x00")
	b = append(b, 1, 4, 1, 0x60, 0, 0) // type () -> ()
	b = append(b, 3, 2, 1, 0)          // function 0 of type 0
	if table {
		b = append(b, 4, 4, 1, 0x70, 0, 1) // table 1 funcref
	}
	body := append([]byte{0}, append(code, 0x0b)...) // no locals
	fn := append([]byte{byte(len(body))}, body...)
	sec := append([]byte{1}, fn...)
	return append(append(b, 10, byte(len(sec))), sec...)
}

func TestMutatesTables(t *testing.T) {
	v128 := append([]byte{0xfd, 12}, make([]byte, 16)...)
	tests := []struct {
		name    string
		wasm    []byte
		want    bool
		wantErr bool
	}{
		{"table.set", module(true, 0x41, 0, 0xd0, 0x70, 0x26, 0), true, false},
		{"table.grow", module(true, 0xd0, 0x70, 0x41, 1, 0xfc, 15, 0, 0x1a), true, false},
		{"table.fill", module(true, 0x41, 0, 0xd0, 0x70, 0x41, 1, 0xfc, 17, 0), true, false},
		{"table.copy", module(true, 0x41, 0, 0x41, 0, 0x41, 0, 0xfc, 14, 0, 0), true, false},
		{"table.init", module(true, 0x41, 0, 0x41, 0, 0x41, 0, 0xfc, 12, 0, 0), true, false},
		{"elem.drop", module(true, 0xfc, 13, 0), true, false},
		{"reads only", module(true,
			0x42, 0x7f, 0x1a, // i64.const -1, drop
			0x42, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f, 0x1a, // i64.const min, drop
			0x41, 0, 0x25, 0, 0x1a, // table.get
			0xfc, 16, 0, 0x1a, // table.size
			0x41, 0, 0x11, 0, 0, // call_indirect
			0x02, 0x40, 0x41, 0, 0x0d, 0, 0x0b, // block, br_if
			0x41, 0, 0x28, 2, 8, 0x1a, // i32.load offset=8
			0xfc, 11, 0, // memory.fill (its operands are not checked)
		), false, false},
		{"v128.const", module(true, append(v128, 0x1a)...), false, false},
		{"no table", module(false, 0x41, 0, 0xd0, 0x70, 0x26, 0), false, false},
		{"unknown instruction", module(true, 0xfc, 99), false, true},
		{"truncated", module(true, 0x41), false, true},
		{"not wasm", []byte("hello, world"), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MutatesTables(tt.wasm)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("MutatesTables = %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestMutatesTables_Guests reads the committed guests: those of the
// runtime's tests and the shipped filters (C, Go), which must be read to
// their end without error.
func TestMutatesTables_Guests(t *testing.T) {
	want := map[string]bool{"tables.wasm": true}
	paths, _ := filepath.Glob("../../testdata/*.wasm")
	more, _ := filepath.Glob("../../../filters/*/*.wasm")
	paths = append(paths, more...)
	if len(more) == 0 {
		t.Fatal("no filters found")
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := MutatesTables(b)
		if err != nil || got != want[filepath.Base(p)] {
			t.Errorf("%s: MutatesTables = %v, %v; want %v", p, got, err, want[filepath.Base(p)])
		}
	}
}

func TestScan_Data(t *testing.T) {
	data := []byte{11, 4, 1, 1, 1, 'x'} // one passive segment "x"
	for _, tt := range []struct {
		name string
		wasm []byte
		want Code
	}{
		{"no data", module(false, 0x01), Code{}},
		{"data unused", append(module(false, 0x01), data...), Code{Data: true}},
		{"memory.init", append(module(false, 0x41, 0, 0x41, 0, 0x41, 1, 0xfc, 8, 0, 0), data...), Code{Data: true, UsesData: true}},
		{"data.drop", append(module(true, 0xfc, 9, 0), data...), Code{Data: true, UsesData: true}},
		{"both", append(module(true, 0xfc, 9, 0, 0xfc, 13, 0), data...), Code{Data: true, UsesData: true, MutatesTables: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Scan(tt.wasm)
			if err != nil || got != tt.want {
				t.Errorf("Scan = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
