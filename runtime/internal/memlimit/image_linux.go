package memlimit

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Image is the linear memory of a snapshot in an anonymous memory file
// (memfd). Instances map it copy-on-write: creating one copies nothing,
// the pages it only reads stay shared with every other instance, and
// reverting to the image drops the pages it wrote.
type Image struct {
	fd   int
	size int
	view []byte // read-only, shared: the image as it is
}

// NewImage makes an image of size bytes (a whole number of pages) whose
// non-zero content is given by runs, offset and bytes; the rest reads as
// zeros and takes no memory.
func NewImage(size int, runs func(yield func(off int, b []byte) bool)) (*Image, error) {
	fd, err := unix.MemfdCreate("sluice-snapshot", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	im := &Image{fd: fd, size: size}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		im.Close()
		return nil, fmt.Errorf("ftruncate: %w", err)
	}
	for off, b := range runs {
		for len(b) > 0 {
			n, err := unix.Pwrite(fd, b, int64(off))
			if err != nil {
				im.Close()
				return nil, fmt.Errorf("pwrite: %w", err)
			}
			b, off = b[n:], off+n
		}
	}
	if size > 0 {
		if im.view, err = unix.Mmap(fd, 0, size, unix.PROT_READ, unix.MAP_SHARED); err != nil {
			im.Close()
			return nil, fmt.Errorf("mmap: %w", err)
		}
	}
	return im, nil
}

// View is the image's content, read-only, sharing its pages: no copy of
// it lives elsewhere. Valid until Close.
func (im *Image) View() []byte { return im.view }

// Size is the image's size in bytes.
func (im *Image) Size() int { return im.size }

// Close releases the image; instances that mapped it keep their mapping.
func (im *Image) Close() {
	if im.view != nil {
		_ = unix.Munmap(im.view)
		im.view = nil
	}
	_ = unix.Close(im.fd)
}

// mapImage reserves limit bytes of address space, zero pages that take no
// memory until written, with im mapped copy-on-write over its start.
func mapImage(im *Image, limit uint64) ([]byte, error) {
	length := uintptr((limit + pageSizeOS - 1) &^ (pageSizeOS - 1))
	if uint64(im.size) > limit {
		return nil, fmt.Errorf("image of %d bytes over the limit of %d", im.size, limit)
	}
	base, err := unix.MmapPtr(-1, 0, nil, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	if im.size > 0 {
		if _, err := unix.MmapPtr(im.fd, 0, base, uintptr(im.size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED); err != nil {
			_ = unix.MunmapPtr(base, length)
			return nil, fmt.Errorf("mmap image: %w", err)
		}
	}
	return unsafe.Slice((*byte)(base), length), nil
}

func unmap(region []byte) {
	_ = unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(region)), uintptr(len(region)))
}

// revert drops the pages of b written since it was mapped: they read
// again as the image's (or zeros past it).
func revert(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return unix.Madvise(b, unix.MADV_DONTNEED)
}

const pageSizeOS = 4096
