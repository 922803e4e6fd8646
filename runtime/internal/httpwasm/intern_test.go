package httpwasm

import (
	"strings"
	"testing"
	"unsafe"
)

func TestInterner(t *testing.T) {
	var in interner
	long := strings.Repeat("v", internMax+1)
	tests := []struct {
		b      string
		reused bool // the second call returns the first call's string
	}{
		{"X-Frame-Options", true},
		{"DENY", true},
		{"", true},
		{strings.Repeat("v", internMax), true},
		{long, false},
	}
	for _, tc := range tests {
		s1 := in.str([]byte(tc.b))
		s2 := in.str([]byte(tc.b))
		if s1 != tc.b || s2 != tc.b {
			t.Errorf("str(%.20q) = %.20q, %.20q", tc.b, s1, s2)
		}
		if same := unsafe.StringData(s1) == unsafe.StringData(s2); same != tc.reused && tc.b != "" {
			t.Errorf("str(%.20q): reused = %v, want %v", tc.b, same, tc.reused)
		}
	}
	b := []byte("X-Frame-Options")
	if a := testing.AllocsPerRun(100, func() { in.str(b) }); a != 0 {
		t.Errorf("a known string: %.1f allocations, want 0", a)
	}
	// A slot taken by other bytes is replaced, not matched.
	for i := range internSlots {
		in.slots[i] = "X-Frame-Optionz"
	}
	if s := in.str(b); s != "X-Frame-Options" {
		t.Errorf("str after the slot was taken = %q", s)
	}
	// The bytes are the guest's memory: a string made from them must not
	// change when the memory does.
	mem := []byte("value-1")
	s := in.str(mem)
	copy(mem, "VALUE-2")
	if s != "value-1" {
		t.Errorf("string changed with the memory: %q", s)
	}
}
