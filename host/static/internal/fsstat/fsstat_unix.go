//go:build unix && !(linux && (amd64 || arm64 || riscv64))

package fsstat

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// At stats path (NUL-terminated, relative to the directory dirfd),
// following symlinks. On this platform it allocates the path string.
func At(dirfd int, path []byte) (ID, error) {
	if len(path) == 0 || path[len(path)-1] != 0 {
		return ID{}, syscall.EINVAL
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, string(path[:len(path)-1]), &st, 0); err != nil {
		return ID{}, err
	}
	return fromStat(&st), nil
}

// File stats an open file with fstat(2).
func File(f *os.File) (ID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return ID{}, err
	}
	return fromStat(&st), nil
}

func fromStat(st *unix.Stat_t) ID {
	mt, ct := unix.TimespecToNsec(st.Mtim), unix.TimespecToNsec(st.Ctim)
	return ID{Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: st.Size, Mtime: mt, Ctime: ct, Mode: uint32(st.Mode)}
}

// Supported reports whether At and Fd work on this platform.
const Supported = true
