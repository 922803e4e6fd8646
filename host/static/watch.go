package static

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/sluicehq/sluice/host/static/internal/fsstat"
)

// Validating the cache. A cached entry is trusted, with no system call,
// for CacheValid after it was read or last checked; past that, one
// fstatat(2) per file compares it with its identity again (fresh), as
// nginx's open_file_cache_valid does. Within that interval a change is
// seen from a file-system event (inotify, through fsnotify): the
// handler watches every directory leading to a cached file, and an event
// naming a file, or a directory above it, drops its entries from the
// cache, so the next request reads the file again. An event arrives
// microseconds after the change that made it; the interval is only the
// safety net for what sends no events (NFS written by another host,
// FUSE) and for directories past MaxWatchedDirs.
//
// Events also make caching safe for a file that just changed (within the
// racy window, see isRacy): a second write in the same timestamp tick,
// which no stat can see, still sends its event. So a file is cached from
// its first request when its directories are watched; otherwise (no
// watcher, a symlink on the way, past the cap) it is cached only once it
// has been quiet for the racy window, as before.
//
// The root itself may be a symlink swapped by a deploy (current ->
// releases/N): the directory holding the root's name is watched for that
// name, and the root is checked by path once per interval, and when the
// name leads to another directory the handler opens it, drops every
// entry and every watch, and serves from it.

// MaxWatchedDirs bounds the directories one handler watches. Entries
// under the others are validated by the interval alone.
const MaxWatchedDirs = 1024

// DefaultCacheValid is how long a cached entry is trusted between stat
// checks, when Options.CacheValid is 0.
const DefaultCacheValid = time.Second

// rootGrace is how long a root directory replaced by a swap stays open
// for the requests that were resolving paths in it.
const rootGrace = 10 * time.Second

// rootDir is one opening of the root: a handler serves from one at a
// time and replaces it when its path comes to name another directory.
type rootDir struct {
	root  *os.Root
	dir   *os.File // the root itself, for fsstat.At
	dirfd int
	id    fsstat.ID // of dir, to see whether the path still names it
	once  sync.Once
}

// openRootDir opens path as a root.
func openRootDir(path string) (*rootDir, error) {
	root, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	dir, err := root.Open(".")
	if err != nil {
		root.Close()
		return nil, err
	}
	id, err := fsstat.File(dir)
	if err == nil && !id.Dir() {
		err = errors.New("not a directory")
	}
	if err != nil {
		dir.Close()
		root.Close()
		return nil, err
	}
	return &rootDir{root: root, dir: dir, dirfd: int(dir.Fd()), id: id}, nil
}

func (r *rootDir) close() {
	r.once.Do(func() {
		r.dir.Close()
		r.root.Close()
	})
}

// sameDir reports whether a and b are the same directory.
func sameDir(a, b fsstat.ID) bool { return a.Dev == b.Dev && a.Ino == b.Ino }

// watcher follows the directories of a handler's cached files.
type watcher struct {
	h    *Handler
	fw   *fsnotify.Watcher
	max  int    // MaxWatchedDirs
	path string // the root as configured, absolute and clean
	done chan struct{}

	mu   sync.Mutex
	real string          // the directory path names, symlinks resolved
	dirs map[string]bool // watched directories, relative to real ("" is the root)

	// hook, when set (tests), sees every event once it is handled.
	hook atomic.Pointer[func(fsnotify.Event)]
}

// newWatcher starts watching for h, or returns nil when events are not
// available: then the interval alone validates the cache.
func newWatcher(h *Handler, rd *rootDir) *watcher {
	abs, err := filepath.Abs(h.opts.Root)
	if err != nil {
		return nil
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil
	}
	w := &watcher{h: h, fw: fw, max: MaxWatchedDirs, path: abs, done: make(chan struct{}), dirs: map[string]bool{}}
	if !w.resolve(rd) {
		fw.Close()
		return nil
	}
	// The name of the root in its parent: a swap of a symlink there, or a
	// directory renamed over it, shows as an event naming w.path.
	if parent := filepath.Dir(abs); parent != abs {
		_ = fw.Add(parent) // without it, the interval sees a swap
	}
	go w.loop()
	return w
}

// resolve records the real path of rd, checking that it is rd's
// directory; it reports false when they differ (the root is being
// swapped right now) or the root cannot be watched.
func (w *watcher) resolve(rd *rootDir) bool {
	real, err := filepath.EvalSymlinks(w.path)
	if err != nil {
		return false
	}
	if id, err := fsstat.Path(real); err != nil || !sameDir(id, rd.id) {
		return false
	}
	w.real = real
	return true
}

func (w *watcher) close() {
	w.fw.Close()
	<-w.done
}

func (w *watcher) loop() {
	defer close(w.done)
	for {
		select {
		case ev, ok := <-w.fw.Events:
			if !ok {
				return
			}
			w.event(ev)
			if f := w.hook.Load(); f != nil {
				(*f)(ev)
			}
		case _, ok := <-w.fw.Errors:
			if !ok {
				return
			}
			// An overflowed queue lost events: nothing cached can be
			// trusted any more.
			w.h.seq.Add(1)
			w.h.cache.clear()
		}
	}
}

// watch makes sure every directory leading to the file key ("/a/b.css":
// the root and "a") is watched, and reports whether they all are.
func (w *watcher) watch(key string) bool {
	parts := strings.Split(strings.Trim(key, "/"), "/")
	w.mu.Lock()
	defer w.mu.Unlock()
	d := ""
	for i := range parts {
		if i == 1 {
			d = parts[0]
		} else if i > 1 {
			d += "/" + parts[i-1]
		}
		if w.dirs[d] {
			continue
		}
		if len(w.dirs) >= w.max {
			return false
		}
		if err := w.fw.Add(filepath.Join(w.real, filepath.FromSlash(d))); err != nil {
			return false
		}
		w.dirs[d] = true
	}
	return true
}

// event drops what an event makes stale.
func (w *watcher) event(ev fsnotify.Event) {
	if ev.Name == w.path {
		w.h.reopenRoot()
		return
	}
	w.mu.Lock()
	real := w.real
	w.mu.Unlock()
	var rel string
	switch {
	case ev.Name == real:
	case strings.HasPrefix(ev.Name, real) && ev.Name[len(real)] == filepath.Separator:
		rel = filepath.ToSlash(ev.Name[len(real)+1:])
	default:
		return // the root's parent, about another name
	}
	// Counted before anything is dropped: an entry being built while this
	// runs is then not cached (cache.put).
	w.h.seq.Add(1)
	key := "/" + rel
	moved := ev.Has(fsnotify.Create) || ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)
	w.h.cache.invalidate(key, moved)
	for _, e := range encodings {
		if base, ok := strings.CutSuffix(key, e.ext); ok && base != "/" {
			w.h.cache.invalidate(base, false) // a sidecar came, went or changed
		}
	}
	if moved {
		w.forget(rel)
	}
}

// forget stops watching the directory rel and those below it, which a
// rename or removal took away (a watch follows the directory, not its
// name).
func (w *watcher) forget(rel string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for d := range w.dirs {
		if rel == "" || d == rel || strings.HasPrefix(d, rel+"/") {
			delete(w.dirs, d)
			_ = w.fw.Remove(filepath.Join(w.real, filepath.FromSlash(d)))
		}
	}
}

// reset drops every watch below the root, for a root that now resolves
// to rd.
func (w *watcher) reset(rd *rootDir) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for d := range w.dirs {
		delete(w.dirs, d)
		_ = w.fw.Remove(filepath.Join(w.real, filepath.FromSlash(d)))
	}
	return w.resolve(rd)
}

// now is the monotonic time of the handler, in nanoseconds.
func (h *Handler) now() int64 { return int64(time.Since(h.start)) }

// valid reports whether a cached entry may be served: within CacheValid
// of its last check, or after a check that renews it.
func (h *Handler) valid(e *entry) bool {
	now := h.now()
	if now-e.checked.Load() < h.validFor {
		return true
	}
	h.checkRoot(now)
	if !h.fresh(e) {
		return false
	}
	e.checked.Store(now)
	return true
}

// checkRoot looks, once per interval, whether the root's path still
// names the directory served; a swap that sent no event is seen here.
func (h *Handler) checkRoot(now int64) {
	last := h.rootChecked.Load()
	if now-last < h.validFor || !h.rootChecked.CompareAndSwap(last, now) {
		return
	}
	id, err := fsstat.Path(h.opts.Root)
	if err == nil && !sameDir(id, h.rd.Load().id) {
		h.reopenRoot()
	}
}

// reopenRoot serves from the directory the root's path names now, if it
// is another one: every entry and watch of the old one is dropped, and
// the old directory closed after rootGrace.
func (h *Handler) reopenRoot() {
	h.rootMu.Lock()
	defer h.rootMu.Unlock()
	if h.closed {
		return
	}
	old := h.rd.Load()
	rd, err := openRootDir(h.opts.Root)
	if err != nil {
		return // gone for now: keep serving the old one
	}
	if sameDir(rd.id, old.id) {
		rd.close()
		return
	}
	h.seq.Add(1)
	h.rd.Store(rd)
	h.cache.clear()
	if h.w != nil && !h.w.reset(rd) {
		h.noEvents.Store(true) // could not tell where it leads: interval only
	}
	h.retired[old] = time.AfterFunc(rootGrace, func() {
		h.rootMu.Lock()
		delete(h.retired, old)
		h.rootMu.Unlock()
		old.close()
	})
}
