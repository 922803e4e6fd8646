// Package fsstat answers "is this still the same file?" with one stat
// call that allocates nothing, relative to an open directory.
package fsstat

import "os"

// ID is what a cached file is validated against: the file's identity
// (device, inode) and the metadata that any change of its content moves
// (size, mtime, ctime). Two IDs are equal only when all fields are.
type ID struct {
	Dev, Ino     uint64
	Size         int64
	Mtime, Ctime int64 // Unix nanoseconds
	Mode         uint32
}

// Regular reports whether the ID describes a regular file.
func (id ID) Regular() bool { return id.Mode&modeMask == modeRegular }

// Dir reports whether the ID describes a directory.
func (id ID) Dir() bool { return id.Mode&modeMask == modeDir }

// These are the POSIX S_IFMT values, which every Unix Go supports shares.
const (
	modeMask    = 0o170000
	modeRegular = 0o100000
	modeDir     = 0o040000
)

// Path opens path and stats it: the identity of what it names now,
// symlinks followed. It is for checks made once in a while, not per
// request.
func Path(path string) (ID, error) {
	f, err := os.Open(path)
	if err != nil {
		return ID{}, err
	}
	defer f.Close()
	return File(f)
}
