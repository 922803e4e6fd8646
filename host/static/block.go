package static

import (
	"errors"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/sluicehq/sluice/config"
)

func init() {
	config.RegisterHandler("static", func() config.Block { return BlockDefaults() })
}

// Block is the `static {}` block of a route (see config.Block for the
// tags): its schema, with BlockDefaults its defaults, with its doc tags
// its reference in config/CONFIG.md. Options turns it into the Options of
// New. Its defaults are those of a config file; Options' zero values
// mean their own, for Go users.
type Block struct {
	// Root is the absolute directory served (resolved against the
	// config file's directory; it must be a readable directory).
	Root string `hcl:"root,custom" type:"path" default:"required" doc:"the directory served; must exist and be readable"`
	// Index lists the files served for a directory request.
	Index []string `hcl:"index" doc:"files served for a directory"`
	// Browse lists directories without an index file.
	Browse bool `hcl:"browse" doc:"list directories that have no index file"`
	// Precompressed lists encodings whose precompressed siblings are
	// served when the client accepts them, in preference order.
	Precompressed []string `hcl:"precompressed,subset=br|zstd|gzip" doc:"serve |FILE.br|, |FILE.zst|, |FILE.gz| when present and accepted; subset of |\"br\"|, |\"zstd\"|, |\"gzip\"|, in preference order"`
	// Compress lists encodings used to compress responses on the fly
	// (and cache the result), in preference order; [] disables.
	Compress []string `hcl:"compress,subset=zstd|br|gzip" doc:"compress on the fly (and cache the result); subset of |\"zstd\"|, |\"br\"|, |\"gzip\"| in preference order; |[]| disables"`
	// CompressMinSize is the smallest file compressed on the fly.
	CompressMinSize int64 `hcl:"compress_min_size" doc:"smaller files are sent as they are"`
	// CompressTypes lists media types compressed on the fly; "text/*"
	// matches every text type.
	CompressTypes []string `hcl:"compress_types" doc:"media types compressed on the fly"`
	// Fallback is a file under Root (like "/index.html") served for
	// paths that match no file: single-page apps.
	Fallback string `hcl:"fallback" doc:"file under |root| served when no file matches (single-page apps), like |\"/index.html\"|; must exist"`
	// Dotfiles serves names starting with "." (otherwise 404).
	Dotfiles bool `hcl:"dotfiles" doc:"serve names starting with |.| (otherwise 404, also through a symlink: |link -> .secret|)"`
	// MIMETypes maps a file extension (".ext") to a media type, over the
	// built-in table.
	MIMETypes map[string]string `hcl:"mime_types" doc:"extension to media type, over the built-in table: |{ \".wasm\" = \"application/wasm\" }|"`
	// CacheControl is the `cache_control {}` block.
	CacheControl BlockCacheControl `hcl:"cache_control,block" default:"" doc:"|Cache-Control| by kind of file; |\"\"| sends no header"`
	// ErrorPages maps a status code (400-599) to a file under Root (like
	// "/404.html") served as the body of that error.
	ErrorPages map[int]string `hcl:"error_pages" doc:"status (400-599) to a file under |root|: |{ 404 = \"/404.html\" }|"`
	// Headers are added to every response.
	Headers map[string]string `hcl:"headers,headers" doc:"added to every response"`
	// MemCacheMaxFile is the largest file kept in memory; larger files
	// are sent from disk (sendfile).
	MemCacheMaxFile int64 `hcl:"mem_cache_max_file" doc:"largest file kept in memory; larger ones are sent from disk"`
	// CacheValid is how long a cached file is served without a system
	// call before a stat checks it again; file-system events make a
	// change seen at once within it.
	CacheValid time.Duration `hcl:"cache_valid" doc:"a cached file is served this long with no system call, then checked with one stat; a change is seen at once from file-system events (inotify), within this interval where there are none (NFS, past 1024 watched directories, |watch = false|); |\"0s\"|: a stat on every request"`
	// Watch validates the cache by file-system events.
	Watch bool `hcl:"watch" doc:"watch the directories of cached files (inotify) so that a change, a rename or a swapped |root| symlink is seen by the next request"`
}

// BlockCacheControl is the `cache_control {}` block: the Cache-Control
// header of static responses. An empty value sends no header.
type BlockCacheControl struct {
	// HTML applies to text/html responses.
	HTML string `hcl:"html" doc:"|text/html|"`
	// Hashed applies to files whose name has a content hash.
	Hashed string `hcl:"hashed" doc:"names with a content hash: a |.| or |-| separated part of 8+ hex digits (or base-36 with a digit), like |app.3f9a1c2b.js|"`
	// Default applies to every other file.
	Default string `hcl:"default" doc:"everything else"`
}

// BlockCompressTypes is the default Block.CompressTypes.
var BlockCompressTypes = []string{
	"text/*",
	"application/javascript",
	"application/json",
	"application/manifest+json",
	"application/wasm",
	"application/xml",
	"image/svg+xml",
}

// BlockDefaults returns the defaults of a static block, stated here once.
func BlockDefaults() *Block {
	return &Block{
		Index:           []string{"index.html"},
		Precompressed:   []string{},
		Compress:        []string{"zstd", "br", "gzip"},
		CompressMinSize: DefaultCompressMinSize,
		CompressTypes:   slices.Clone(BlockCompressTypes),
		MIMETypes:       map[string]string{},
		CacheControl:    BlockCacheControl{HTML: defaultHTMLCache, Hashed: defaultHashedCache},
		ErrorPages:      map[int]string{},
		Headers:         map[string]string{},
		MemCacheMaxFile: DefaultMemCacheMaxFile,
		CacheValid:      DefaultCacheValid,
		Watch:           true,
	}
}

// Options are the Options of New for b, serving below the route path
// stripPrefix ("" for "/").
func (b *Block) Options(stripPrefix string) Options {
	return Options{
		Root:            b.Root,
		Index:           b.Index,
		Browse:          b.Browse,
		Precompressed:   b.Precompressed,
		Compress:        b.Compress,
		CompressMinSize: b.CompressMinSize,
		CompressTypes:   b.CompressTypes,
		Fallback:        b.Fallback,
		Dotfiles:        b.Dotfiles,
		MIMETypes:       b.MIMETypes,
		CacheControl: CacheControl{
			HTML:    b.CacheControl.HTML,
			Hashed:  b.CacheControl.Hashed,
			Default: b.CacheControl.Default,
			Exact:   true,
		},
		ErrorPages:      b.ErrorPages,
		Headers:         b.Headers,
		MemCacheMaxFile: b.MemCacheMaxFile,
		StripPrefix:     stripPrefix,
		CacheValid:      cacheValid(b.CacheValid),
		NoWatch:         !b.Watch,
	}
}

// cacheValid maps the block's cache_valid, where "0s" means a check on
// every request, onto Options.CacheValid, where 0 means the default.
func cacheValid(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// DecodeHCL decodes root and checks what names files under it.
func (s *Block) DecodeHCL(b *config.Body) {
	var written string
	rootOK := false
	if b.Require("root") && b.String("root", &written) {
		s.Root = b.Resolve(written)
		fi, err := os.Stat(s.Root)
		switch {
		case written == "":
			b.Errorf(b.Range("root"), "Empty path", "root must name a directory.")
		case err != nil:
			b.Errorf(b.Range("root"), "Missing static root", "root %q: %s (paths are relative to the config file's directory).", written, config.IOReason(err))
		case !fi.IsDir():
			b.Errorf(b.Range("root"), "Static root is not a directory", "root %q is a file; name the directory to serve.", written)
		default:
			if f, err := os.Open(s.Root); err != nil {
				b.Errorf(b.Range("root"), "Unreadable static root", "root %q: %s.", written, config.IOReason(err))
			} else {
				if _, err := f.ReadDir(1); err != nil && !errors.Is(err, io.EOF) {
					b.Errorf(b.Range("root"), "Unreadable static root", "root %q: %s.", written, config.IOReason(err))
				} else {
					rootOK = true
				}
				f.Close()
			}
		}
	}
	if b.Has("index") {
		for i, n := range s.Index {
			if n == "" || strings.ContainsAny(n, "/\\") {
				b.Errorf(b.ElemRange("index", i), "Invalid index", "Index %q must be a file name, without \"/\".", n)
			}
		}
	}
	if b.Has("compress_types") {
		for i, t := range s.CompressTypes {
			if !config.ValidMediaRange(t) {
				b.Errorf(b.ElemRange("compress_types", i), "Invalid media type", "%q is not a media type like \"text/html\" or \"text/*\".", t)
			}
		}
	}
	checkUnder := func(rng hcl.Range, what, p string) {
		if !strings.HasPrefix(p, "/") || strings.Contains(p, "..") {
			b.Errorf(rng, "Invalid "+what, "%s %q must be a path under root starting with \"/\", like \"/index.html\".", what, p)
			return
		}
		if !rootOK {
			return
		}
		if fi, err := os.Stat(s.Root + p); err != nil || !fi.Mode().IsRegular() {
			b.Errorf(rng, "Missing "+what, "%s %q is not a file under root %q.", what, p, written)
		}
	}
	if b.Has("fallback") {
		checkUnder(b.Range("fallback"), "fallback", s.Fallback)
	}
	for _, ext := range slices.Sorted(maps.Keys(s.MIMETypes)) {
		rng := b.KeyRange("mime_types", ext)
		if !strings.HasPrefix(ext, ".") || len(ext) < 2 || strings.Contains(ext, "/") {
			b.Errorf(rng, "Invalid extension", "mime_types keys are extensions starting with \".\", like \".wasm\", not %q.", ext)
		} else if !config.ValidMediaType(s.MIMETypes[ext]) {
			b.Errorf(rng, "Invalid media type", "%q is not a media type like \"text/html; charset=utf-8\".", s.MIMETypes[ext])
		}
	}
	for _, code := range slices.Sorted(maps.Keys(s.ErrorPages)) {
		checkUnder(b.KeyRange("error_pages", strconv.Itoa(code)), "error page", s.ErrorPages[code])
	}
}

// DecodeHCL checks the values as header values.
func (c *BlockCacheControl) DecodeHCL(b *config.Body) {
	for name, v := range map[string]string{"html": c.HTML, "hashed": c.Hashed, "default": c.Default} {
		if b.Has(name) {
			if err := config.CheckHeaderValue(v, b.IsSecret(v)); err != nil {
				b.Errorf(b.Range(name), "Invalid header value", "%s.", err)
			}
		}
	}
}
