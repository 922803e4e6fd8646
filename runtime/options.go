package runtime

import (
	"io"
	"io/fs"
	goruntime "runtime"
	"time"

	"github.com/sluicehq/sluice/runtime/internal/memlimit"
)

// Defaults of FilterOptions.
const (
	DefaultTimeout     = time.Second
	DefaultInitTimeout = 10 * time.Second
	DefaultMemoryLimit = 256 << 20
	DefaultMaxBuffer   = 1 << 20
)

// FilterOptions configures a filter. The zero value gives the defaults.
type FilterOptions struct {
	// Config is handed to the guest by get_config (the filter's settings,
	// JSON by convention). Nil means empty.
	Config []byte
	// Timeout bounds each guest call, and the wait for an idle instance.
	// Zero means DefaultTimeout (1s).
	Timeout time.Duration
	// BodyTimeout bounds the read of the request body of a filter whose
	// guest enabled buffer_request when it started: the host reads the
	// body whole (at most MaxBuffer) before the request takes an
	// instance, and fails it with ErrRequestBodyTimeout when the client
	// has not sent it by then. Zero means Timeout.
	BodyTimeout time.Duration
	// InitTimeout bounds instantiation (_initialize or _start). Zero
	// means DefaultInitTimeout (10s).
	InitTimeout time.Duration
	// MemoryLimit caps the linear memory of each instance, in bytes,
	// rounded up to 64 KiB pages. Zero means DefaultMemoryLimit (256 MiB).
	MemoryLimit int64
	// PoolSize is the number of instances, created up front. Zero means
	// runtime.NumCPU().
	PoolSize int
	// MaxBuffer is the most body bytes the host holds for one call of the
	// guest: a request body it reads with buffer_request, or a response
	// body it reads. Reading stops one byte past it, and the request
	// fails with ErrRequestBodyTooLarge or ErrResponseBodyTooLarge. Zero
	// means DefaultMaxBuffer (1 MiB); negative means the guest may have
	// no body buffered at all (an empty one still reads).
	MaxBuffer int64
	// WASI configures guests that import wasi_snapshot_preview1.
	WASI WASIOptions
	// Reset is when an instance is made a copy of the snapshot of the
	// guest's start-up again: ResetNever (the default) or ResetRequest.
	Reset Reset
}

// WASIOptions configures what a WASI guest sees. By default it has no
// files, no environment and no arguments; its stdout and stderr go to the
// log; clocks are real and random bytes come from crypto/rand.
type WASIOptions struct {
	// Stdout and Stderr receive the guest's output. Nil means the log
	// (Info for stdout, Warn for stderr), one record per line.
	Stdout, Stderr io.Writer
	// Env is the guest's environment. Nil means empty.
	Env map[string]string
	// FS is mounted read-only at "/". Nil means no filesystem.
	FS fs.FS
}

// FilterStats is a snapshot of a filter for the admin API.
type FilterStats struct {
	Name        string
	Digest      string
	PoolSize    int
	Live        int // instances alive, every module pool counted
	InUse       int // calls in flight on the current module's pool: instances checked out
	Invocations uint64
	Errors      uint64
	Swaps       uint64
	SwapErrors  uint64
	LastSwap    time.Time // zero until the first Swap
	// StartUps counts the instances that ran the guest's start-up
	// (_initialize or _start): one per module and config when snapshots
	// work. Restores counts the instances made from a snapshot instead,
	// Resets the in-place resets of ResetRequest.
	StartUps uint64
	Restores uint64
	Resets   uint64
}

// withDefaults fills in the defaults of the zero fields (see each field),
// rounds MemoryLimit up to whole pages, and turns a negative MaxBuffer
// into 0 (no body may be buffered).
func (opts FilterOptions) withDefaults() FilterOptions {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.InitTimeout <= 0 {
		opts.InitTimeout = DefaultInitTimeout
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = opts.Timeout
	}
	if opts.MemoryLimit <= 0 {
		opts.MemoryLimit = DefaultMemoryLimit
	}
	opts.MemoryLimit = memlimit.Pages(opts.MemoryLimit) * memlimit.PageSize
	if opts.PoolSize <= 0 {
		opts.PoolSize = goruntime.NumCPU()
	}
	switch {
	case opts.MaxBuffer == 0:
		opts.MaxBuffer = DefaultMaxBuffer
	case opts.MaxBuffer < 0:
		opts.MaxBuffer = 0
	}
	return opts
}
