//go:build !unix

package fsstat

import "errors"

var errUnsupported = errors.New("fsstat: not supported on this platform")

// At is not supported here; callers validate through os.Root instead.
func At(dirfd int, path []byte) (ID, error) { return ID{}, errUnsupported }

// Fd is not supported here.
func Fd(fd uintptr) (ID, error) { return ID{}, errUnsupported }

// Supported reports whether At and Fd work on this platform.
const Supported = false
