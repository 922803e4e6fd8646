// Package static is sluice's native static-file handler: it maps a
// request path onto a directory and answers GET and HEAD with the file,
// as nginx, Caddy or Static Web Server would, and faster.
//
// Where it sits on the request path: after the route's request filters
// (which may have rewritten the path) and before its response filters
// (which may read and replace what it produced). It is an
// exchange.Handler, so the same code serves HTTP/1.1 on fasthttp and
// HTTP/2 on net/http. It returns an *exchange.Error for 4xx and 5xx
// answers and lets the host render them, except for statuses configured
// with an error page, which it serves itself.
//
// What it does, in request order: method check (GET, HEAD; OPTIONS is
// 204; others 405 with Allow); StripPrefix; percent-decoding once and
// cleaning the path (NUL is 400, an encoded slash or any backslash is
// 404, ".." never climbs above the root); dotfile refusal (on the slow
// path also for what symlinks point at, symlink.go); lookup in the
// open-file cache; then content-coding negotiation (precompressed
// sidecars, on-the-fly zstd/brotli/gzip), conditional requests (RFC 9110
// §13 in its order of precedence), byte ranges (single, suffix, open,
// multipart/byteranges), and the body from memory or with sendfile(2).
// A miss resolves the path through os.Root: a directory redirects to its
// slashed path, serves its index file or its listing (Browse); nothing
// found serves the Fallback (single-page apps) or 404.
//
// The fast path: each cached entry holds the file's identity (device,
// inode, size, mtime, ctime), its precomputed header values and, for
// small files, its bytes. A request for it costs no system call and no
// allocation: file-system events (watch.go) drop an entry as soon as its
// file, a sidecar or a directory above it changes, and once per
// CacheValid one fstatat(2) on the root's directory descriptor compares
// it with its identity again, the safety net where no events come. Any
// difference sends the request down the slow path through os.Root. The
// root's own path is watched too, so that a swapped release symlink is
// followed.
//
// Security: every open goes through os.Root, so neither "..", encoded
// tricks nor symlinks can leave Root; a cached entry holds bytes read
// through os.Root, and is dropped when an event says its path changed or
// when, checked after CacheValid, the path no longer names the inode it
// was read from. File-system watches only invalidate: nothing is read
// through them, so a watch that a symlink led outside the root can only
// make the cache drop entries.
//
// The `static {}` block of a config is this package's own (block.go):
// Block is its schema (hcl tags), BlockDefaults its defaults, DecodeHCL
// its checks with source positions, the doc tags its reference rows in
// config/CONFIG.md, and Block.Options the Options it builds with. It
// imports config only to register the block (config imports nothing of
// the host); it must not import runtime: the Wasm runtime never sees
// files.
package static
