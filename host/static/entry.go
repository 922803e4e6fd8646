package static

import (
	"errors"
	"hash/maphash"
	"io"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/host/static/internal/fsstat"
)

// entry is what the handler knows about one file: its identity when it
// was read, the header values every response repeats, and its bytes when
// it is small. An entry is immutable once cached, except for the
// compressed variants it gains lazily and its clock bit.
type entry struct {
	key string    // cleaned path ("/a/b.css"), the cache key
	rel []byte    // key without its leading slash, NUL-terminated, for fsstat.At
	id  fsstat.ID // what the bytes and headers were built from
	// dirRel, when set, names the file's directory, whose identity dirID
	// is checked too: a precompressed sidecar may appear in it.
	dirRel []byte
	dirID  fsstat.ID
	// body is the whole file when it is at most MemCacheMaxFile; nil
	// means the file is opened per request and sent with sendfile.
	body []byte

	ctype, etag, lastMod, cacheControl []byte
	modSec                             int64
	mediaType                          string

	// cands lists the codings this file can be sent in, in the server's
	// order of preference; sidecar[e] is set when coding e comes from a
	// precompressed file, else it is compressed on the fly.
	cands   []int8
	sidecar [nEnc]*variant
	dyn     [nEnc]atomic.Pointer[variant]
	mu      sync.Mutex // serializes on-the-fly compression

	// seq is the handler's event count when the file was opened: the
	// entry is cached only if no event came since (cache.put).
	seq uint64
	// checked is when the entry was last known to describe its file
	// (h.now time); it is trusted for CacheValid after that.
	checked atomic.Int64

	// file is the open-file cache's descriptor (openfile.go), set only
	// while the entry is cached.
	file atomic.Pointer[sharedFile]

	ref     atomic.Bool  // clock bit for eviction
	mem     atomic.Int64 // bytes held, as counted by the cache
	inCache bool         // guarded by the shard lock
}

// variant is one content-coded form of a file.
type variant struct {
	enc     int
	rel     []byte    // sidecar: its name, NUL-terminated
	id      fsstat.ID // sidecar: its identity
	body    []byte    // nil: sidecar sent with sendfile, or compressed while streaming
	size    int64     // len(body), sidecar size, or -1 while streaming
	etag    []byte
	encName []byte
	noGain  bool // compressing did not make it smaller: send identity
}

// fresh reports whether a cached entry still describes the file at its
// path, with one stat call per file (its sidecars included). Equal
// identity (device, inode, size, mtime, ctime) means the bytes read
// earlier through os.Root are still the file's bytes, wherever the path
// now leads. It runs once per CacheValid (valid), not per request.
func (h *Handler) fresh(e *entry) bool {
	dirfd := h.rd.Load().dirfd
	id, err := fsstat.At(dirfd, e.rel)
	if err != nil || id != e.id {
		return false
	}
	for _, v := range e.sidecar {
		if v != nil {
			if id, err := fsstat.At(dirfd, v.rel); err != nil || id != v.id {
				return false
			}
		}
	}
	if e.dirRel != nil {
		id, err := fsstat.At(dirfd, e.dirRel)
		return err == nil && id == e.dirID
	}
	return true
}

// prep is what is known before a file is opened to build its entry.
type prep struct {
	seq     uint64 // h.seq before the open
	at      int64  // h.now() before the open
	watched bool   // every directory leading to the file is watched
}

// prepare watches the directories leading to key, before the file is
// opened, so that any change after the open sends an event.
func (h *Handler) prepare(key string) prep {
	w := h.w != nil && !h.noEvents.Load() && h.w.watch(key)
	return prep{seq: h.seq.Load(), at: h.now(), watched: w}
}

// entryFor returns the cached entry for a cleaned file path, building it
// through os.Root when it is missing or stale.
func (h *Handler) entryFor(key string) (*entry, error) {
	e := h.cache.get([]byte(key))
	if e != nil && h.valid(e) {
		return e, nil
	}
	p := h.prepare(key)
	f, err := h.root().Open(relName(key))
	if err != nil {
		if e != nil {
			h.cache.remove(e)
		}
		return nil, err
	}
	defer f.Close()
	return h.build(key, f, p)
}

// build makes an entry from an open file and caches it unless it changed
// too recently to trust.
func (h *Handler) build(key string, f *os.File, p prep) (*entry, error) {
	id, err := fsstat.File(f)
	if err != nil {
		return nil, err
	}
	if !id.Regular() {
		return nil, errNotRegular
	}
	rel := relName(key)
	e := &entry{key: key, rel: append([]byte(rel), 0), id: id, seq: p.seq}
	e.checked.Store(p.at)
	// Events cover the file only if its path is the one watched: through
	// a symlink, a change of the target's directory names another path.
	watched := p.watched && !hasLink(h.root(), rel)
	if id.Size <= h.maxFile {
		if e.body, id, err = readStable(f, id); err != nil {
			return nil, err
		}
		e.id = id
	}
	ct := contentType(key, h.opts.MIMETypes)
	e.ctype = []byte(ct)
	e.mediaType = mediaType(ct)
	e.etag = makeETag(id.Size, id.Mtime, "")
	mod := time.Unix(0, id.Mtime).UTC()
	e.modSec = mod.Unix()
	e.lastMod = []byte(mod.Format(http.TimeFormat))
	if cc := h.opts.CacheControl.value(key, e.mediaType); cc != "" {
		e.cacheControl = []byte(cc)
	}

	// With events, a second change in the same tick sends its own event.
	racy := !watched && h.isRacy(id)
	compressible := matchType(e.mediaType, h.compressTypes)
	if len(h.precompressed) > 0 && compressible && !watched {
		// A sidecar created later must not go unnoticed: remember the
		// directory, whose mtime moves when a name is added, and check it
		// as well while some sidecar is missing. Only for compressible
		// types: nobody precompresses a PNG, and the check costs a stat.
		dir := path.Dir(rel)
		dirRel := append([]byte(dir), 0)
		if did, err := fsstat.At(h.rd.Load().dirfd, dirRel); err == nil {
			e.dirRel, e.dirID = dirRel, did
		} else {
			racy = true
		}
	}
	for _, enc := range h.precompressed {
		v, r := h.sidecarFor(rel, enc)
		if v != nil {
			e.sidecar[enc] = v
			e.cands = append(e.cands, int8(enc))
			racy = racy || (r && !watched)
		}
	}
	if e.dirRel != nil && len(e.cands) == len(h.precompressed) {
		e.dirRel = nil // every sidecar found: nothing to appear
	}
	if id.Size >= h.minCompress && len(h.compress) > 0 && compressible {
		for _, enc := range h.compress {
			if e.sidecar[enc] == nil {
				e.cands = append(e.cands, int8(enc))
			}
		}
	}
	mem := int64(len(e.body))
	for _, v := range e.sidecar {
		if v != nil {
			mem += int64(len(v.body))
		}
	}
	e.mem.Store(mem)
	if !racy && fsstat.Supported {
		h.cache.put(e)
	}
	return e, nil
}

// isRacy reports whether a file changed so recently that another change
// in the same timestamp tick would go unnoticed.
func (h *Handler) isRacy(id fsstat.ID) bool {
	// ctime, which no one can set, is the time of the last change; mtime
	// may be anything (touch -d), so it is used only where there is no
	// ctime.
	changed := id.Ctime
	if changed == 0 {
		changed = id.Mtime
	}
	return time.Now().UnixNano()-changed < h.racy.Load()
}

// sidecarFor opens the precompressed sidecar of rel for coding enc, if
// there is a regular file.
func (h *Handler) sidecarFor(rel string, enc int) (v *variant, racy bool) {
	name := rel + encodings[enc].ext
	if !h.opts.Dotfiles && hiddenTarget(h.root(), name) {
		return nil, false
	}
	f, err := h.root().Open(name)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	id, err := fsstat.File(f)
	if err != nil || !id.Regular() {
		return nil, false
	}
	v = &variant{enc: enc, rel: append([]byte(name), 0), id: id, size: id.Size,
		etag: makeETag(id.Size, id.Mtime, encodings[enc].name), encName: []byte(encodings[enc].name)}
	if id.Size <= h.maxFile {
		if v.body, id, err = readStable(f, id); err != nil || id.Size != v.size {
			return nil, false
		}
	}
	return v, h.isRacy(id)
}

// readStable reads a whole file of identity id and returns its bytes and
// the identity they belong to. A file that changes while it is read is
// read again, a few times, before giving up.
func readStable(f *os.File, id fsstat.ID) ([]byte, fsstat.ID, error) {
	for try := 0; ; try++ {
		b := make([]byte, id.Size)
		_, rerr := f.ReadAt(b, 0)
		id2, err := fsstat.File(f)
		if err != nil {
			return nil, id, err
		}
		if id2 == id {
			if rerr != nil && rerr != io.EOF {
				return nil, id, rerr
			}
			return b, id, nil
		}
		if try == 3 || !id2.Regular() {
			return nil, id, errChanged
		}
		id = id2
	}
}

// makeETag returns a strong entity-tag from size and mtime: "size-mtime"
// in hex, with "-coding" for an encoded variant.
func makeETag(size, mtime int64, coding string) []byte {
	b := make([]byte, 0, 40)
	b = append(b, '"')
	b = strconv.AppendInt(b, size, 16)
	b = append(b, '-')
	b = strconv.AppendInt(b, mtime, 16)
	if coding != "" {
		b = append(b, '-')
		b = append(b, coding...)
	}
	return append(b, '"')
}

// openChecked opens a file of an entry for sending and checks that it is
// still the file the entry describes.
func (h *Handler) openChecked(rel []byte, id fsstat.ID) (*os.File, error) {
	f, err := h.root().Open(string(rel[:len(rel)-1]))
	if err != nil {
		return nil, err
	}
	if got, err := fsstat.File(f); err != nil || got != id {
		f.Close()
		return nil, errChanged
	}
	return f, nil
}

var errChanged = errors.New("file changed")

// cache maps cleaned paths to entries: sharded maps under read-write
// locks, bounded in entries and bytes, evicting with a clock sweep.
type cache struct {
	seq        *atomic.Uint64 // the handler's event count; see put
	seed       maphash.Seed
	shards     [nShards]shard
	entries    atomic.Int64
	bytes      atomic.Int64
	maxEntries int64
	maxBytes   int64
	evictMu    sync.Mutex
	hand       int // guarded by evictMu
}

const nShards = 64

type shard struct {
	mu sync.RWMutex
	m  map[string]*entry
	_  [40]byte // keep shards on separate cache lines
}

func newCache(maxEntries, maxBytes int64, seq *atomic.Uint64) *cache {
	c := &cache{seq: seq, seed: maphash.MakeSeed(), maxEntries: maxEntries, maxBytes: maxBytes}
	for i := range c.shards {
		c.shards[i].m = map[string]*entry{}
	}
	return c
}

func (c *cache) shard(key []byte) *shard {
	return &c.shards[maphash.Bytes(c.seed, key)&(nShards-1)]
}

// get returns the entry for key, or nil. It does not allocate.
func (c *cache) get(key []byte) *entry {
	s := c.shard(key)
	s.mu.RLock()
	e := s.m[string(key)]
	s.mu.RUnlock()
	if e != nil && !e.ref.Load() {
		e.ref.Store(true)
	}
	return e
}

// put caches e, unless an event came since its file was opened: the
// event may be about the file and its invalidation may have run before
// e was there to drop. (The watcher counts an event before it takes a
// shard lock to drop entries; put checks under the lock.)
func (c *cache) put(e *entry) {
	s := c.shard([]byte(e.key))
	s.mu.Lock()
	if c.seq.Load() != e.seq {
		s.mu.Unlock()
		return
	}
	if old := s.m[e.key]; old != nil {
		old.inCache = false
		old.dropFile()
		c.entries.Add(-1)
		c.bytes.Add(-old.mem.Load())
	}
	s.m[e.key] = e
	e.inCache = true
	e.ref.Store(true) // about to be served: not the first to go
	c.entries.Add(1)
	c.bytes.Add(e.mem.Load())
	s.mu.Unlock()
	c.maybeEvict()
}

// grow counts n more bytes held by e, if e is still cached.
func (c *cache) grow(e *entry, n int64) {
	s := c.shard([]byte(e.key))
	s.mu.Lock()
	if e.inCache {
		e.mem.Add(n)
		c.bytes.Add(n)
	}
	s.mu.Unlock()
	c.maybeEvict()
}

func (c *cache) remove(e *entry) {
	s := c.shard([]byte(e.key))
	s.mu.Lock()
	if s.m[e.key] == e {
		delete(s.m, e.key)
		e.inCache = false
		e.dropFile()
		c.entries.Add(-1)
		c.bytes.Add(-e.mem.Load())
	}
	s.mu.Unlock()
}

// install sets e's open-file descriptor if e is still cached and has
// none; the cache's reference is then s's.
func (c *cache) install(e *entry, s *sharedFile) bool {
	sh := c.shard([]byte(e.key))
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return e.inCache && e.file.CompareAndSwap(nil, s)
}

func (c *cache) over() bool {
	return c.entries.Load() > c.maxEntries || c.bytes.Load() > c.maxBytes
}

// maybeEvict sweeps the shards like a clock hand: an entry used since the
// last pass loses its bit, one not used is dropped, until the cache is
// within bounds. One goroutine sweeps at a time.
func (c *cache) maybeEvict() {
	if !c.over() || !c.evictMu.TryLock() {
		return
	}
	defer c.evictMu.Unlock()
	for i := 0; i < 2*nShards+1 && c.over(); i++ {
		s := &c.shards[c.hand]
		c.hand = (c.hand + 1) % nShards
		s.mu.Lock()
		for k, e := range s.m {
			if !c.over() {
				break
			}
			if e.ref.Load() {
				e.ref.Store(false)
				continue
			}
			delete(s.m, k)
			e.inCache = false
			e.dropFile()
			c.entries.Add(-1)
			c.bytes.Add(-e.mem.Load())
		}
		s.mu.Unlock()
	}
}

// invalidate drops the entry of key and, when tree is set, every entry
// below key as a directory.
func (c *cache) invalidate(key string, tree bool) {
	if tree && (key == "/" || key == "") {
		c.clear()
		return
	}
	s := c.shard([]byte(key))
	s.mu.Lock()
	if e := s.m[key]; e != nil {
		c.drop(s, e)
	}
	s.mu.Unlock()
	if !tree {
		return
	}
	prefix := key + "/"
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for k, e := range s.m {
			if strings.HasPrefix(k, prefix) {
				c.drop(s, e)
			}
		}
		s.mu.Unlock()
	}
}

// drop removes e from s, whose lock is held.
func (c *cache) drop(s *shard, e *entry) {
	delete(s.m, e.key)
	e.inCache = false
	e.dropFile()
	c.entries.Add(-1)
	c.bytes.Add(-e.mem.Load())
}

func (c *cache) clear() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for k, e := range s.m {
			e.inCache = false
			e.dropFile()
			delete(s.m, k)
		}
		s.mu.Unlock()
	}
	c.entries.Store(0)
	c.bytes.Store(0)
}

func (c *cache) len() int { return int(c.entries.Load()) }
