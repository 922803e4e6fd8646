package memlimit

import (
	"bytes"
	"testing"
)

func TestImage(t *testing.T) {
	const size = 4 * PageSize
	im, err := NewImage(size, func(yield func(int, []byte) bool) {
		_ = yield(100, []byte("hello")) && yield(3*PageSize, []byte("world"))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	mems := make([]*Memory, 2)
	for i := range mems {
		m := New(8 * PageSize)
		m.Map(im)
		m.allocate(PageSize, 1<<32)
		if err := m.Mapped(); err != nil {
			t.Fatal(err)
		}
		if b := m.Reallocate(PageSize); len(b) != PageSize || string(b[100:105]) != "hello" {
			t.Fatalf("memory %d: %q", i, b[100:105])
		}
		b := m.Reallocate(size + PageSize)
		if string(b[3*PageSize:3*PageSize+5]) != "world" || !bytes.Equal(b[size:], make([]byte, PageSize)) {
			t.Fatal("the image's second run, or the zeros past it, are wrong")
		}
		mems[i] = m
	}
	a, b := mems[0].buf, mems[1].buf
	copy(a[100:], "HELLO")
	a[size+1] = 1
	if string(b[100:105]) != "hello" {
		t.Error("a write to one mapping shows in the other")
	}
	if err := mems[0].Revert(len(a)); err != nil {
		t.Fatal(err)
	}
	if string(a[100:105]) != "hello" || a[size+1] != 0 {
		t.Error("Revert did not bring the image back")
	}
	if mems[0].Reallocate(9*PageSize) != nil || !mems[0].Hit() {
		t.Error("a mapped memory grew past the cap")
	}
	for _, m := range mems {
		m.Free()
	}
}
