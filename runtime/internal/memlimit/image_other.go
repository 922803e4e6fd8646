//go:build !linux

package memlimit

import "errors"

// Image is the linear memory of a snapshot that instances map
// copy-on-write. Only Linux has it (memfd); elsewhere NewImage fails and
// instances copy the snapshot into memory of their own.
type Image struct{ size int }

var errNoImage = errors.New("memory images need Linux")

// NewImage fails: see Image.
func NewImage(size int, runs func(yield func(off int, b []byte) bool)) (*Image, error) {
	return nil, errNoImage
}

// Size is the image's size in bytes.
func (im *Image) Size() int { return im.size }

// View is nil.
func (im *Image) View() []byte { return nil }

// Close does nothing.
func (im *Image) Close() {}

func mapImage(im *Image, limit uint64) ([]byte, error) { return nil, errNoImage }
func unmap(region []byte)                              {}
func revert(b []byte) error                            { return errNoImage }
