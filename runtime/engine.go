package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/sluicehq/sluice/runtime/internal/core"
	"github.com/sluicehq/sluice/runtime/internal/httpwasm"
	"github.com/sluicehq/sluice/runtime/internal/interrupt"
	"github.com/sluicehq/sluice/runtime/internal/loopcheck"
	"github.com/sluicehq/sluice/runtime/internal/snapshot"
)

// Observer is told about every guest invocation. The host plugs its
// metrics in here. It is called on the request path: keep it cheap.
type Observer interface {
	// Invocation reports one call: filter name, phase ("request" or
	// "response"), outcome (one of the Outcome constants) and duration.
	Invocation(filter, phase, outcome string, d time.Duration)
}

// EngineOptions configures an Engine. The zero value is usable.
type EngineOptions struct {
	// CacheDir holds compiled modules across restarts. Empty means
	// os.UserCacheDir()/sluice/wasm; when that can't be created, the
	// cache lives in memory only.
	CacheDir string
	// NoDiskCache keeps compiled modules in memory only.
	NoDiskCache bool
	// Logger receives compile, failure and guest log lines. Nil means
	// slog.Default().
	Logger *slog.Logger
	// TracerProvider makes the per-invocation spans. Nil means no spans.
	TracerProvider trace.TracerProvider
	// Observer is told about every invocation. Nil means nobody.
	Observer Observer
	// Services are the host services filters may use, whatever their
	// ABI (see runtime/api). The zero value gives each one's default.
	Services Services
	// SlowCompile is the compile time from which a compile is logged at
	// Info rather than Debug. Zero means one second.
	SlowCompile time.Duration

	// noDeadlines turns guest deadlines off; benchmarks use it to measure
	// what deadlines cost. Never set in production: a looping guest would
	// then hold its thread forever.
	noDeadlines bool
	// noBare makes instances from a snapshot instantiate with their data
	// segments, noImage copy the snapshot's memory instead of mapping it,
	// for tests of those paths (the ones other platforms and modules take).
	noBare, noImage bool
}

// Engine compiles and runs filters. There is one per process: one wazero
// runtime (compiler where the platform has one), one compilation cache.
type Engine struct {
	rt     wazero.Runtime
	cache  wazero.CompilationCache
	log    *slog.Logger
	tracer trace.Tracer
	traced bool // a TracerProvider was given: calls look for a sampled span
	obs    Observer
	slow   time.Duration
	// guestLog is Services.Log, else log: where guests' output goes.
	guestLog *slog.Logger

	noBare, noImage bool

	mu      sync.Mutex
	modules map[string]*moduleEntry
	wasi    bool
	closed  bool
}

type moduleEntry struct {
	ready chan struct{}
	m     *Module
	err   error
	refs  int
}

// NewEngine starts the runtime and defines the host modules of each
// binding (http-wasm's http_handler).
func NewEngine(ctx context.Context, opts EngineOptions) (*Engine, error) {
	e := &Engine{
		log:     opts.Logger,
		obs:     opts.Observer,
		slow:    opts.SlowCompile,
		noBare:  opts.noBare,
		noImage: opts.noImage,
		modules: map[string]*moduleEntry{},
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	e.guestLog = opts.Services.Log
	if e.guestLog == nil {
		e.guestLog = e.log
	}
	if e.slow == 0 {
		e.slow = time.Second
	}
	tp := opts.TracerProvider
	e.traced = tp != nil
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	e.tracer = tp.Tracer("github.com/sluicehq/sluice/runtime")

	if !opts.NoDiskCache {
		dir := opts.CacheDir
		if dir == "" {
			if base, err := os.UserCacheDir(); err == nil {
				dir = filepath.Join(base, "sluice", "wasm")
			}
		}
		if dir != "" {
			c, err := wazero.NewCompilationCacheWithDir(dir)
			if err != nil {
				e.log.Warn("wasm compilation cache on disk unavailable; using memory", "dir", dir, "err", err)
			} else {
				e.cache = c
			}
		}
	}
	if e.cache == nil {
		e.cache = wazero.NewCompilationCache()
	}
	cfg := wazero.NewRuntimeConfig(). // the compiler on amd64 and arm64
						WithCompilationCache(e.cache).
						WithCloseOnContextDone(!opts.noDeadlines) // loop checks; see package interrupt
	e.rt = wazero.NewRuntimeWithConfig(ctx, cfg)
	loopcheck.Thin(e.rt) // most loop checks return at once; see package loopcheck
	for _, b := range bindings {
		if err := b.Define(ctx, e.rt, opts.Services); err != nil {
			_ = e.rt.Close(ctx)
			return nil, fmt.Errorf("runtime: %s: %w", b.Name(), err)
		}
	}
	return e, nil
}

// Close closes every module and instance and the runtime. Close filters
// first to let requests in flight finish.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	err := e.rt.Close(ctx)
	if cerr := e.cache.Close(ctx); err == nil {
		err = cerr
	}
	return err
}

// Module is a compiled guest, shared by every filter and module pool that
// runs the same bytes. Release it with Close when done with it; filters
// hold their own reference.
type Module struct {
	e        *Engine
	digest   string
	compiled wazero.CompiledModule
	binding  core.Binding // the ABI whose check accepted the module
	info     core.Info
	// startSection: wazero runs a function while instantiating, which
	// only its own goroutine per call can interrupt; see detachWatcher.
	startSection bool
	detach       sync.Once
	detached     bool // wazero starts no goroutine per call; set in detach
	// noSnapshot says why instances of this module can't be made from a
	// snapshot; empty when they can (see snapshot.go).
	noSnapshot string
	code       snapshot.Code
	snapMu     sync.Mutex
	snaps      map[string]*snapEntry // by snapKey
	// bare is the module without its data segments, for instances made
	// from a snapshot; nil when they need them or there are none.
	bare wazero.CompiledModule
}

// Digest identifies the module by its bytes: "sha256:<hex>".
func (m *Module) Digest() string { return m.digest }

// Compile compiles wasm, or returns the module already compiled from the
// same bytes. It checks the guest against the http_handler ABI, so
// `sluice validate` uses it too. Compiles are logged with their duration.
func (e *Engine) Compile(ctx context.Context, wasm []byte) (*Module, error) {
	sum := sha256.Sum256(wasm)
	digest := "sha256:" + hex.EncodeToString(sum[:])

	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, fmt.Errorf("compile %s: engine %w", digest, ErrClosed)
	}
	if ent, ok := e.modules[digest]; ok {
		ent.refs++
		e.mu.Unlock()
		<-ent.ready
		if ent.err != nil {
			e.release(digest, ent)
			return nil, ent.err
		}
		return ent.m, nil
	}
	ent := &moduleEntry{ready: make(chan struct{}), refs: 1}
	e.modules[digest] = ent
	e.mu.Unlock()

	start := time.Now()
	ent.m, ent.err = e.compile(ctx, digest, wasm)
	d := time.Since(start)
	close(ent.ready)
	if ent.err != nil {
		e.release(digest, ent)
		return nil, ent.err
	}
	level := slog.LevelDebug
	if d >= e.slow {
		level = slog.LevelInfo
	}
	e.log.Log(ctx, level, "compiled wasm module", "digest", digest, "bytes", len(wasm), "duration", d)
	return ent.m, nil
}

func (e *Engine) compile(ctx context.Context, digest string, wasm []byte) (*Module, error) {
	compiled, err := e.rt.CompileModule(ctx, wasm)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", digest, err)
	}
	b, info, err := pickBinding(compiled)
	if err != nil {
		_ = compiled.Close(ctx)
		return nil, fmt.Errorf("compile %s: %w", digest, err)
	}
	m := &Module{e: e, digest: digest, compiled: compiled, binding: b, info: info, startSection: interrupt.HasStartSection(wasm), snaps: map[string]*snapEntry{}}
	code, err := snapshot.Scan(wasm)
	switch {
	case err != nil:
		m.noSnapshot = "its code can't be checked for table changes: " + err.Error()
	case code.MutatesTables:
		m.noSnapshot = "its code can change a table (table.set, table.grow, table.fill, table.copy, table.init or elem.drop)"
	}
	m.code = code
	// Instances made from a snapshot don't need the data segments, unless
	// the code reads them (memory.init, data.drop). The copy is made now,
	// before anything instantiates the module (see snapshot.Bare).
	if m.noSnapshot == "" && code.Data && !code.UsesData && !e.noBare {
		if m.bare, err = snapshot.Bare(compiled); err != nil {
			e.log.Debug("instances from a snapshot are instantiated with their data segments", "digest", digest, "reason", err)
		}
	}
	return m, nil
}

// bindings are the ABIs the engine serves, in the order their checks are
// tried: a second ABI is a second binding package and an entry here.
// Filter's phases drive http-wasm's exports (call.go).
var bindings = []core.Binding{httpwasm.Binding{}}

// pickBinding returns the binding whose check accepts compiled. When none
// does, the error says why for each (for the one binding there is, its
// own reason, as before).
func pickBinding(compiled wazero.CompiledModule) (core.Binding, core.Info, error) {
	var errs []error
	for _, b := range bindings {
		info, err := b.Check(compiled)
		if err == nil {
			return b, info, nil
		}
		if len(bindings) > 1 {
			err = fmt.Errorf("not a %s guest: %w", b.Name(), err)
		}
		errs = append(errs, err)
	}
	return nil, core.Info{}, errors.Join(errs...)
}

// retain takes another reference to m (a filter's module pool using it).
func (m *Module) retain() {
	m.e.mu.Lock()
	m.e.modules[m.digest].refs++
	m.e.mu.Unlock()
}

// Close releases the caller's reference. The compiled code is dropped
// when nothing uses the module any more (the disk cache keeps it).
func (m *Module) Close(ctx context.Context) error {
	m.e.mu.Lock()
	ent := m.e.modules[m.digest]
	m.e.mu.Unlock()
	if ent == nil {
		return nil
	}
	m.e.release(m.digest, ent)
	return nil
}

func (e *Engine) release(digest string, ent *moduleEntry) {
	e.mu.Lock()
	ent.refs--
	last := ent.refs == 0
	if last && e.modules[digest] == ent {
		delete(e.modules, digest)
	}
	e.mu.Unlock()
	if last && ent.m != nil {
		_ = ent.m.compiled.Close(context.Background())
	}
}

// ensureWASI defines wasi_snapshot_preview1 the first time a guest needs it.
func (e *Engine) ensureWASI(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.wasi {
		return nil
	}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, e.rt); err != nil {
		return fmt.Errorf("define %s: %w", core.WASIModule, err)
	}
	e.wasi = true
	return nil
}
