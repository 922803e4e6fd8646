//go:build !unix

package fsstat

import (
	"errors"
	"os"
)

var errUnsupported = errors.New("fsstat: not supported on this platform")

// At is not supported here; callers validate through os.Root instead.
func At(dirfd int, path []byte) (ID, error) { return ID{}, errUnsupported }

// File stats an open file. Without inode numbers the ID holds only size,
// mtime and type.
func File(f *os.File) (ID, error) {
	fi, err := f.Stat()
	if err != nil {
		return ID{}, err
	}
	id := ID{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
	switch {
	case fi.Mode().IsRegular():
		id.Mode = modeRegular
	case fi.IsDir():
		id.Mode = modeDir
	}
	return id, nil
}

// Supported reports whether At works on this platform.
const Supported = false
