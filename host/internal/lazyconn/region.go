package lazyconn

import (
	"io"
	"os"
)

// A FileRegion is a reader of part of a file. ReadFrom sends one with
// sendfile(2) from the region's own offset, leaving the file's offset
// alone, so that one descriptor can serve concurrent requests (an
// open-file cache). Read, for any other writer, must read at the
// region's offset too (ReadAt).
type FileRegion interface {
	io.Reader
	// Region returns the file, the offset of the next byte to send and
	// how many bytes are left.
	Region() (f *os.File, off, n int64)
	// Advance records that n more bytes were sent.
	Advance(n int64)
}

// How the next Write goes out.
const (
	nextPlain = iota
	nextCork
)

// CorkNext sets TCP_CORK (Linux; elsewhere it does nothing) before the
// next Write, the first of a response, and clears it once the FileRegion
// that follows has been sent with sendfile (ReadFrom), or after the next
// write: the head and the body leave in full segments even when the
// socket buffer splits the body, as with nginx's tcp_nopush. The caller
// must be sure another write follows, the rest of the response, or the
// first one waits up to the kernel's 200 ms for it.
func (c *Conn) CorkNext() { c.next.Store(nextCork) }
