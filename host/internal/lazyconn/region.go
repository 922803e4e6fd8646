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
	nextMore
	nextCork
)

// MoreNext makes the next Write go out with MSG_MORE (Linux; elsewhere
// it does nothing): the kernel holds its bytes to fill a segment with
// what is written next, without the two setsockopt calls of TCP_CORK. A
// response head followed by a large body then leaves in full segments
// instead of one short segment first. The caller must be sure another
// write follows, or the bytes wait for it: MoreNext is for a write that
// is not the last of a response.
func (c *Conn) MoreNext() { c.next.Store(nextMore) }

// CorkNext sets TCP_CORK (Linux; elsewhere it does nothing) before the
// next Write, a response head, and clears it once the FileRegion that
// follows has been sent with sendfile (ReadFrom), or after any other
// write: head and file leave in full segments even when the socket
// buffer splits the sendfile, as nginx's tcp_nopush does.
func (c *Conn) CorkNext() { c.next.Store(nextCork) }
