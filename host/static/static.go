package static

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/textproto"
	"os"
	"path"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/static/internal/fsstat"
)

// Options configure one static route. The host maps the HCL config onto
// it; the zero value of each field means its documented default.
type Options struct {
	// Root is the directory served. Every open goes through os.Root, so
	// neither "..", encoded tricks nor a symlink can leave it. Required.
	Root string
	// Index lists the files served for a directory, first found wins.
	// nil means ["index.html"]; an empty non-nil slice means none.
	Index []string
	// Browse lists directories that have no index file, as HTML (sortable
	// with ?sort=name|size|time&order=asc|desc) or as JSON when the client
	// accepts application/json. Default false: such a directory is 404.
	Browse bool
	// Precompressed lists the sidecar files to look for beside each file,
	// in preference order: "br" (file.br), "zstd" (file.zst), "gzip"
	// (file.gz). Default none.
	Precompressed []string
	// Compress lists the codings used to compress on the fly, in
	// preference order: "zstd", "br", "gzip". Default none.
	Compress []string
	// CompressMinSize is the smallest file compressed on the fly, in
	// bytes. 0 means 1024; a negative value means any size.
	CompressMinSize int64
	// CompressTypes lists the media types compressed on the fly; "text/*"
	// style wildcards match a whole top-level type. nil means text/*,
	// JavaScript, JSON, XML, SVG, WebAssembly, TTF/OTF fonts and icons.
	CompressTypes []string
	// Fallback is a path under Root served with 200 when nothing matches
	// a request (single-page apps: "/index.html"), except for dotfile
	// paths. Default none.
	Fallback string
	// Dotfiles allows paths with a segment starting with '.'. Default
	// false: they are 404, except "/.well-known/".
	Dotfiles bool
	// MIMETypes maps extensions (".ext") to media types, on top of the
	// built-in table. Unknown extensions are application/octet-stream.
	MIMETypes map[string]string
	// CacheControl chooses Cache-Control per file; see its fields.
	CacheControl CacheControl
	// ErrorPages maps a status (400-599) to a path under Root whose file
	// is served, with that status, instead of returning the error.
	ErrorPages map[int]string
	// Headers are added to every response of the route.
	Headers map[string]string
	// MemCacheMaxFile is the largest file whose bytes are kept in memory,
	// in bytes; larger files are sent with sendfile(2), from the open-file
	// cache's descriptor (openfile.go) or a fresh one per request. 0 means
	// 256 KiB; negative means none.
	MemCacheMaxFile int64
	// MemCacheMaxBytes bounds the file bytes (and compressed variants)
	// kept in memory, evicting the least recently used. 0 means 64 MiB.
	MemCacheMaxBytes int64
	// StripPrefix is removed from the request path before it is mapped
	// onto Root (the host passes the route's path, "/assets/"). A request
	// outside it is 404.
	StripPrefix string
	// CacheValid is how long a cached file is served without a system
	// call before one stat(2) checks it again, as nginx's
	// open_file_cache_valid; file-system events (NoWatch) make a change
	// seen at once within it (watch.go). 0 means 1 s; negative means a
	// check on every request.
	CacheValid time.Duration
	// NoWatch turns off the file-system events: a change is then seen
	// within CacheValid. Default false: on Linux, the directories of
	// cached files are watched (inotify), at most MaxWatchedDirs of them;
	// elsewhere the interval alone validates the cache.
	NoWatch bool
}

// Defaults, as documented on Options.
const (
	DefaultCompressMinSize  = 1024
	DefaultMemCacheMaxFile  = 256 << 10
	DefaultMemCacheMaxBytes = 64 << 20
	// MaxCachedPaths bounds the entries of the cache.
	MaxCachedPaths = 10000
)

// Handler serves files from one directory. It is safe for concurrent use.
type Handler struct {
	opts          Options
	rd            atomic.Pointer[rootDir] // the root served; see reopenRoot
	index         []string
	index0        []byte // index[0], for the fast path
	precompressed []int
	compress      []int
	compressTypes []string
	minCompress   int64
	maxFile       int64
	prefix        string // StripPrefix without its trailing slash; "" for none
	fallback      string // cleaned
	errorPages    map[int]string
	extra         []header
	cache         *cache
	// racy is how recently a file may have changed for its cached bytes
	// to be trusted without events; see isRacy.
	racy atomic.Int64 // a time.Duration; atomic for the tests that change it

	// Validation (watch.go): an entry is trusted for validFor after its
	// last check (e.checked, in h.now time); w, when events work, drops
	// entries as their files change, counting each event in seq.
	start       time.Time
	validFor    int64
	rootChecked atomic.Int64
	w           *watcher
	noEvents    atomic.Bool // the watcher lost track of the root
	seq         atomic.Uint64

	rootMu  sync.Mutex
	retired map[*rootDir]*time.Timer // swapped-out roots, closing after rootGrace
	closed  bool
}

type header struct {
	name  string
	value []byte
}

// racyWindow covers the coarsest timestamp granularity of the file
// systems we run on (FAT: 2 s): a file changed within it can change again
// without moving its mtime or ctime, so its bytes are not cached until
// it has been quiet that long.
const racyWindow = 2 * time.Second

// New validates opts and opens the root directory.
func New(opts Options) (*Handler, error) {
	h := &Handler{opts: opts}
	h.racy.Store(int64(racyWindow))
	if err := h.provision(); err != nil {
		return nil, err
	}
	rd, err := openRootDir(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("static: root %q: %w", opts.Root, err)
	}
	h.rd.Store(rd)
	h.start = time.Now()
	h.retired = map[*rootDir]*time.Timer{}
	h.cache = newCache(MaxCachedPaths, h.opts.MemCacheMaxBytes, &h.seq)
	// Linux only: fsnotify's kqueue backend (BSD, macOS) opens every
	// file of a watched directory, which MaxWatchedDirs does not bound.
	if !opts.NoWatch && fsstat.Supported && runtime.GOOS == "linux" {
		h.w = newWatcher(h, rd)
	}
	return h, nil
}

// root is the os.Root served now.
func (h *Handler) root() *os.Root { return h.rd.Load().root }

// provision checks the options and fills in the defaults.
func (h *Handler) provision() error {
	o := &h.opts
	fail := func(format string, args ...any) error {
		return fmt.Errorf("static: root %q: "+format, append([]any{o.Root}, args...)...)
	}
	if o.Root == "" {
		return errors.New("static: root is required")
	}
	h.index = o.Index
	if h.index == nil {
		h.index = []string{"index.html"}
	}
	for _, n := range h.index {
		if n == "" || n == "." || n == ".." || strings.ContainsAny(n, "/\\\x00") {
			return fail("index %q: must be a file name", n)
		}
	}
	if len(h.index) > 0 {
		h.index0 = []byte(h.index[0])
	}
	var err error
	if h.precompressed, err = encodingList("precompressed", o.Precompressed); err != nil {
		return fail("%v", err)
	}
	if h.compress, err = encodingList("compress", o.Compress); err != nil {
		return fail("%v", err)
	}
	h.minCompress = o.CompressMinSize
	switch {
	case h.minCompress == 0:
		h.minCompress = DefaultCompressMinSize
	case h.minCompress < 0:
		h.minCompress = 0
	}
	h.compressTypes = o.CompressTypes
	if h.compressTypes == nil {
		h.compressTypes = defaultCompressTypes
	}
	for _, t := range h.compressTypes {
		if !strings.Contains(t, "/") && t != "*" {
			return fail("compress_types: %q is not a media type", t)
		}
	}
	if o.Fallback != "" {
		if h.fallback, err = cleanOptionPath(o.Fallback); err != nil {
			return fail("fallback: %v", err)
		}
	}
	for status, p := range o.ErrorPages {
		if status < 400 || status > 599 {
			return fail("error page for %d: status must be 400-599", status)
		}
		c, err := cleanOptionPath(p)
		if err != nil {
			return fail("error page for %d: %v", status, err)
		}
		if h.errorPages == nil {
			h.errorPages = map[int]string{}
		}
		h.errorPages[status] = c
	}
	if o.MIMETypes != nil {
		m := make(map[string]string, len(o.MIMETypes))
		for ext, t := range o.MIMETypes {
			if !strings.HasPrefix(ext, ".") || strings.ContainsAny(ext, "/\\") {
				return fail("mime type for %q: extension must start with '.'", ext)
			}
			if t == "" || strings.ContainsAny(t, "\r\n") {
				return fail("mime type for %q: invalid type %q", ext, t)
			}
			m[strings.ToLower(ext)] = t
		}
		o.MIMETypes = m
	}
	o.CacheControl.withDefaults()
	for name, v := range o.Headers {
		if !validHeaderName(name) || strings.ContainsAny(v, "\r\n\x00") {
			return fail("header %q: invalid name or value", name)
		}
		h.extra = append(h.extra, header{textproto.CanonicalMIMEHeaderKey(name), []byte(v)})
	}
	switch {
	case o.CacheValid == 0:
		h.validFor = int64(DefaultCacheValid)
	case o.CacheValid > 0:
		h.validFor = int64(o.CacheValid)
	}
	h.maxFile = o.MemCacheMaxFile
	switch {
	case h.maxFile == 0:
		h.maxFile = DefaultMemCacheMaxFile
	case h.maxFile < 0:
		h.maxFile = -1
	}
	switch {
	case o.MemCacheMaxBytes == 0:
		o.MemCacheMaxBytes = DefaultMemCacheMaxBytes
	case o.MemCacheMaxBytes < 0:
		o.MemCacheMaxBytes = 0
		h.maxFile = -1
	}
	if h.maxFile > o.MemCacheMaxBytes {
		h.maxFile = o.MemCacheMaxBytes
	}
	if p := o.StripPrefix; p != "" {
		if p[0] != '/' {
			return fail("strip_prefix %q: must start with '/'", p)
		}
		h.prefix = strings.TrimRight(p, "/")
	}
	return nil
}

// cleanOptionPath cleans a path given in the options ("/index.html").
func cleanOptionPath(p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q must start with '/'", p)
	}
	c := path.Clean(p)
	if c == "/" || strings.ContainsAny(c, "\\\x00") {
		return "", fmt.Errorf("path %q must name a file", p)
	}
	return c, nil
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}

// Close stops watching, releases the root directory and drops the
// cache.
func (h *Handler) Close() error {
	h.rootMu.Lock()
	h.closed = true
	for rd, t := range h.retired {
		t.Stop()
		rd.close()
		delete(h.retired, rd)
	}
	h.rootMu.Unlock()
	if h.w != nil {
		h.w.close()
	}
	h.cache.clear()
	rd := h.rd.Load()
	err := rd.dir.Close()
	if err2 := rd.root.Close(); err == nil {
		err = err2
	}
	return err
}

var (
	allowValue = []byte("GET, HEAD")
)

// ServeExchange serves a GET or HEAD request from the root. It answers
// OPTIONS with 204 and other methods with 405. It returns an
// *exchange.Error for 4xx and 5xx answers, except for statuses with an
// error page, which it serves itself.
func (h *Handler) ServeExchange(x exchange.Exchange) error {
	head := false
	switch string(x.Method()) {
	case "GET":
	case "HEAD":
		head = true
	case "OPTIONS":
		h.setExtra(x)
		x.SetResponseHeaderBytes("Allow", allowValue)
		x.SetStatus(http.StatusNoContent)
		return nil
	default:
		h.setExtra(x)
		x.SetResponseHeaderBytes("Allow", allowValue)
		return &exchange.Error{Status: http.StatusMethodNotAllowed, Message: "method not allowed"}
	}
	h.setExtra(x)
	raw := x.Path()
	if h.prefix != "" {
		if len(raw) < len(h.prefix) || string(raw[:len(h.prefix)]) != h.prefix ||
			(len(raw) > len(h.prefix) && raw[len(h.prefix)] != '/') {
			return h.fail(x, http.StatusNotFound, head)
		}
		raw = raw[len(h.prefix):]
		if len(raw) == 0 {
			return h.redirectDir(x, "/")
		}
	}
	var buf [256]byte
	p, st := cleanPath(buf[:0], raw)
	switch st {
	case pathBad:
		return h.fail(x, http.StatusBadRequest, head)
	case pathNotFound:
		return h.fail(x, http.StatusNotFound, head)
	}
	if !h.opts.Dotfiles && hiddenSegment(p) {
		return h.fail(x, http.StatusNotFound, head)
	}
	key := p
	if p[len(p)-1] == '/' && h.index0 != nil {
		key = append(p, h.index0...)
	}
	if e := h.cache.get(key); e != nil {
		if h.valid(e) {
			return h.serveFile(x, e, head, http.StatusOK, 1)
		}
		h.cache.remove(e)
	}
	return h.slow(x, string(p), head)
}

func (h *Handler) setExtra(x exchange.Exchange) {
	for i := range h.extra {
		x.SetResponseHeaderBytes(h.extra[i].name, h.extra[i].value)
	}
}

// slow resolves a cleaned path through os.Root: a file (cached for the
// next request), a directory (redirect, index, listing) or nothing
// (fallback, 404).
func (h *Handler) slow(x exchange.Exchange, name string, head bool) error {
	h.checkRoot(h.now())
	if !h.opts.Dotfiles && hiddenTarget(h.root(), name) {
		return h.fail(x, http.StatusNotFound, head) // as a dotfile asked for
	}
	fi, err := h.root().Stat(relName(name))
	switch {
	case err != nil:
		return h.missing(x, head, err)
	case fi.IsDir():
		if !strings.HasSuffix(name, "/") {
			return h.redirectDir(x, name+"/")
		}
		for _, idx := range h.index {
			if !h.opts.Dotfiles && hiddenTarget(h.root(), name+idx) {
				continue
			}
			e, err := h.entryFor(name + idx)
			if err == nil {
				return h.serveFile(x, e, head, http.StatusOK, 1)
			}
			if !isNotFound(err) {
				return h.fileError(x, head, err)
			}
		}
		if h.opts.Browse {
			return h.list(x, name, head)
		}
		return h.missing(x, head, nil)
	case !fi.Mode().IsRegular() || strings.HasSuffix(name, "/"):
		return h.missing(x, head, nil)
	}
	e, err := h.entryFor(name)
	if err != nil {
		if isNotFound(err) {
			return h.missing(x, head, err)
		}
		return h.fileError(x, head, err)
	}
	return h.serveFile(x, e, head, http.StatusOK, 1)
}

// missing answers for a path that names nothing servable: the fallback
// when there is one, else 404. A permission error is 403.
func (h *Handler) missing(x exchange.Exchange, head bool, err error) error {
	if err != nil && !isNotFound(err) {
		return h.fileError(x, head, err)
	}
	if h.fallback != "" {
		e, err := h.entryFor(h.fallback)
		if err == nil {
			return h.serveFile(x, e, head, http.StatusOK, 1)
		}
	}
	return h.fail(x, http.StatusNotFound, head)
}

// fileError maps an error from the file system onto a status. Errors
// that reveal the layout (a path escaping the root) are plain 404s.
func (h *Handler) fileError(x exchange.Exchange, head bool, err error) error {
	switch {
	case isNotFound(err):
		return h.fail(x, http.StatusNotFound, head)
	case errors.Is(err, fs.ErrPermission):
		return h.fail(x, http.StatusForbidden, head)
	}
	if e := h.fail(x, http.StatusInternalServerError, head); e != nil {
		return &exchange.Error{Status: http.StatusInternalServerError, Message: "internal server error", Err: err}
	}
	return nil
}

// isNotFound reports whether err means there is nothing servable at a
// path: missing, a file where a directory was expected, a symlink leaving
// the root, a name too long, or not a regular file.
func isNotFound(err error) bool {
	var pe *fs.PathError
	if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes") {
		return true
	}
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotRegular) ||
		errors.Is(err, errENOTDIR) || errors.Is(err, errENAMETOOLONG) || errors.Is(err, errELOOP) ||
		errors.Is(err, fs.ErrInvalid)
}

var errNotRegular = errors.New("not a regular file")

// fail answers with status: from its error page when one is configured
// and present, else by returning an *exchange.Error for the host to render.
func (h *Handler) fail(x exchange.Exchange, status int, head bool) error {
	if p, ok := h.errorPages[status]; ok {
		if e, err := h.entryFor(p); err == nil {
			return h.serveFile(x, e, head, status, 1)
		}
	}
	return &exchange.Error{Status: status, Message: strings.ToLower(http.StatusText(status))}
}

// redirectDir sends a directory request without its trailing slash to the
// slashed path (301), keeping the query. The Location is built from the
// cleaned, re-escaped path, so it always starts with exactly one slash.
func (h *Handler) redirectDir(x exchange.Exchange, name string) error {
	loc := h.prefix + escapePath(name)
	if q := x.Query(); len(q) > 0 {
		loc += "?" + string(q)
	}
	x.SetResponseHeader("Location", loc)
	x.SetStatus(http.StatusMovedPermanently)
	return nil
}

// relName maps a cleaned path onto a name for os.Root.
func relName(name string) string {
	name = strings.Trim(name, "/")
	if name == "" {
		return "."
	}
	return name
}
