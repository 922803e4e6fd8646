// Package memlimit caps the linear memory of one Wasm instance.
//
// wazero's RuntimeConfig.WithMemoryLimitPages applies to a whole runtime;
// sluice runs one runtime per process and wants a cap per filter, so each
// instance is created with a Memory from this package (through wazero's
// experimental.WithMemoryAllocator). Growth past the cap fails the guest's
// memory.grow (it returns -1, as the spec says) and is remembered, so the
// host can tell a guest that died of the cap from one that merely trapped.
//
// On Linux a memory can also be a copy-on-write mapping of an Image, the
// memory of a snapshot of the guest's start-up kept in a memory file:
// instances made from the snapshot then share the pages they only read.
package memlimit

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// PageSize is the Wasm page size.
const PageSize = 65536

// Pages rounds bytes up to whole pages.
func Pages(bytes int64) int64 { return (bytes + PageSize - 1) / PageSize }

// Memory is the allocator and the linear memory of one instance.
type Memory struct {
	limit   uint64
	reserve uint64
	buf     []byte
	image   *Image
	region  []byte // the mapping of image, whose start buf is; nil when buf is Go's
	mapErr  error
	hit     atomic.Bool
	size    atomic.Uint64
}

// New returns an allocator that caps memory at limit bytes.
func New(limit uint64) *Memory { return &Memory{limit: limit} }

// With returns ctx carrying m as the memory allocator for instantiation.
func With(ctx context.Context, m *Memory) context.Context {
	return experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(m.allocate))
}

// Reserve makes the memory allocated at instantiation hold n bytes
// without reallocating (within the limit): an instance made from a
// snapshot grows to the snapshot's size at once.
func (m *Memory) Reserve(n uint64) { m.reserve = n }

// Map makes the memory allocated at instantiation a copy-on-write
// mapping of im (see Image). When the mapping fails the memory is Go's,
// all zeros, and Mapped reports the error: the caller copies the image's
// content (its View) instead.
func (m *Memory) Map(im *Image) { m.image = im }

// Mapped reports whether the memory is a mapping of the image given to
// Map: nil when it is, else why not.
func (m *Memory) Mapped() error {
	switch {
	case m.region != nil:
		return nil
	case m.mapErr != nil:
		return m.mapErr
	}
	return errors.New("no image mapped")
}

// Revert makes the first n bytes of a mapped memory read as the image
// again (zeros past it), dropping the pages written since.
func (m *Memory) Revert(n int) error {
	if m.region == nil {
		return errors.New("no image mapped")
	}
	return revert(m.region[:n])
}

func (m *Memory) allocate(capacity, maximum uint64) experimental.LinearMemory {
	if maximum < m.limit {
		m.limit = maximum
	}
	if m.image != nil {
		region, err := mapImage(m.image, m.limit)
		if err == nil {
			m.region = region
			m.buf = region[:0]
			return m
		}
		m.mapErr = err
	}
	capacity = max(capacity, m.reserve)
	if capacity > m.limit {
		capacity = m.limit
	}
	m.buf = make([]byte, 0, capacity)
	return m
}

// Reallocate implements experimental.LinearMemory.
func (m *Memory) Reallocate(size uint64) []byte {
	if size > m.limit {
		m.hit.Store(true)
		return nil
	}
	if m.region != nil {
		m.buf = m.region[:size] // pages past the old size are zero, or the image's
	} else if n := uint64(len(m.buf)); size > n {
		// Bytes past len were never handed to the guest, so they are zero.
		m.buf = slices.Grow(m.buf, int(size-n))[:size]
	}
	m.size.Store(size)
	return m.buf
}

// Free implements experimental.LinearMemory.
func (m *Memory) Free() {
	m.buf = nil
	if m.region != nil {
		unmap(m.region)
		m.region = nil
	}
}

// Hit reports whether the guest ever tried to grow past the cap.
func (m *Memory) Hit() bool { return m.hit.Load() }

// Size is the current size of the memory in bytes.
func (m *Memory) Size() uint64 { return m.size.Load() }
