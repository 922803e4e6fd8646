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

func TestMemory_Reserve(t *testing.T) {
	m := New(8 * PageSize)
	m.Reserve(4 * PageSize)
	m.allocate(PageSize, 1<<32)
	a := m.Reallocate(PageSize)
	b := m.Reallocate(4 * PageSize)
	if len(b) != 4*PageSize || &a[0] != &b[0] {
		t.Error("growing to the reserve reallocated")
	}
	m = New(2 * PageSize)
	m.Reserve(4 * PageSize)
	m.allocate(PageSize, 1<<32)
	if c := cap(m.buf); c > 2*PageSize {
		t.Errorf("reserve over the limit: capacity %d", c)
	}
}
