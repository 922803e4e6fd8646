package static

import (
	"os"
	"sync/atomic"

	"github.com/sluicehq/sluice/host/exchange"
)

// The open-file cache: a cached entry of a file too large to keep in
// memory keeps one descriptor open, which every request for it sends from
// with sendfile(2) at its own offsets (exchange.FileAtSender), instead of
// opening, checking and closing the file each time. It is nginx's
// open_file_cache. Files held in memory are written from memory: on
// loopback, sendfile(2) of a 111 KiB file costs more CPU than writing its
// bytes (about 150 against 110 µs per response in a Go benchmark, reader
// included).
//
// The descriptor is checked once, when opened, against the identity the
// entry was built from; every request checks that the path still has that
// identity (fresh), as for the bytes in memory. An entry leaving the cache
// (eviction, a changed file, a new generation closing the handler) drops
// the cache's reference; the descriptor closes when the last request
// sending from it is done.

// MaxOpenFiles bounds the descriptors the open-file caches of all
// handlers keep open, besides those in flight.
const MaxOpenFiles = 4096

// openFiles counts the descriptors cached, in all handlers.
var openFiles atomic.Int64

// sharedFile is an open descriptor shared by the cache and the requests
// sending from it, closed with its last reference.
type sharedFile struct {
	f    *os.File
	refs atomic.Int32
}

// acquire takes a reference, unless the file is already closed.
func (s *sharedFile) acquire() bool {
	for {
		r := s.refs.Load()
		if r <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// Close drops a reference; the last one closes the file.
func (s *sharedFile) Close() error {
	if s.refs.Add(-1) != 0 {
		return nil
	}
	openFiles.Add(-1)
	return s.f.Close()
}

// dropFile drops the cache's reference to e's descriptor, if any. It is
// called when e leaves the cache, under its shard's lock.
func (e *entry) dropFile() {
	if s := e.file.Swap(nil); s != nil {
		_ = s.Close()
	}
}

// sendShared sends n bytes of e's file from off from the cached
// descriptor, opening and caching it first if needed. It reports false
// when the exchange cannot send it that way, or e has no descriptor to
// keep (not cached, too many open): then the caller sends the body as
// before.
func (h *Handler) sendShared(x exchange.Exchange, e *entry, off, n int64) bool {
	fs, ok := x.(exchange.FileAtSender)
	if !ok || !fs.SendsFiles() {
		return false
	}
	s := e.file.Load()
	if s == nil || !s.acquire() {
		if s = h.openShared(e); s == nil {
			return false
		}
	}
	fs.SendFileAt(s.f, off, n, s)
	return true
}

// openShared opens e's file for the cache and returns it with a
// reference for the caller, or nil.
func (h *Handler) openShared(e *entry) *sharedFile {
	if openFiles.Add(1) > MaxOpenFiles {
		openFiles.Add(-1)
		return nil
	}
	f, err := h.openChecked(e.rel, e.id)
	if err != nil {
		openFiles.Add(-1)
		return nil
	}
	s := &sharedFile{f: f}
	s.refs.Store(2) // the cache's and the caller's
	if !h.cache.install(e, s) {
		s.refs.Store(1) // not kept: closed once sent
	}
	return s
}
