package memlimit

import "testing"

func TestMemory(t *testing.T) {
	m := New(4 * PageSize)
	m.allocate(PageSize, 1<<32)
	if b := m.Reallocate(PageSize); len(b) != PageSize {
		t.Fatalf("len %d", len(b))
	}
	b := m.Reallocate(4 * PageSize)
	if len(b) != 4*PageSize || m.Hit() {
		t.Fatalf("len %d hit %v", len(b), m.Hit())
	}
	for _, c := range b {
		if c != 0 {
			t.Fatal("grown memory not zero")
		}
	}
	if m.Reallocate(5*PageSize) != nil || !m.Hit() {
		t.Error("grew past the cap")
	}
	if Pages(1) != 1 || Pages(PageSize) != 1 || Pages(PageSize+1) != 2 {
		t.Error("Pages")
	}
}
