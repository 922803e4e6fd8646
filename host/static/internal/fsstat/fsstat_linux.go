//go:build linux && (amd64 || arm64 || riscv64)

package fsstat

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// At stats path (NUL-terminated, relative to the directory dirfd),
// following symlinks, with one newfstatat(2) system call. It allocates
// nothing.
func At(dirfd int, path []byte) (ID, error) {
	if len(path) == 0 || path[len(path)-1] != 0 {
		return ID{}, syscall.EINVAL
	}
	var st unix.Stat_t
	_, _, errno := syscall.Syscall6(unix.SYS_NEWFSTATAT, uintptr(dirfd),
		uintptr(unsafe.Pointer(&path[0])), uintptr(unsafe.Pointer(&st)), 0, 0, 0)
	if errno != 0 {
		return ID{}, errno
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
	return ID{
		Dev:   uint64(st.Dev),
		Ino:   uint64(st.Ino),
		Size:  st.Size,
		Mtime: int64(st.Mtim.Sec)*1e9 + int64(st.Mtim.Nsec),
		Ctime: int64(st.Ctim.Sec)*1e9 + int64(st.Ctim.Nsec),
		Mode:  uint32(st.Mode),
	}
}

// Supported reports whether At and Fd work on this platform.
const Supported = true
