package generation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/chain"
	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/runtime"
)

// BuildFilters compiles and instantiates every filter of cfg, off the
// request path, and watches each module file for hot swaps. engine
// returns the Wasm engine to compile with (called only when cfg has
// filters). The returned close func drains and closes them all.
func BuildFilters(cfg *config.Config, engine func() (*runtime.Engine, error), log *slog.Logger) (map[string]*runtime.Filter, func() error, error) {
	filters := map[string]*runtime.Filter{}
	var stops []func()
	closeAll := func() error {
		for _, stop := range stops {
			stop()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var errs []error
		for _, f := range filters {
			errs = append(errs, f.Close(ctx))
		}
		return errors.Join(errs...)
	}
	if len(cfg.Filters) == 0 {
		return filters, closeAll, nil
	}
	e, err := engine()
	if err != nil {
		return nil, nil, err
	}
	ctx := context.Background()
	for _, fc := range cfg.Filters {
		f, err := newFilter(ctx, e, fc, filterOptions(fc))
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		filters[fc.Name] = f
		stop, err := f.Watch(fc.Module)
		if err != nil {
			log.Warn("module not watched; changes need a reload", "filter", fc.Name, "error", err)
		} else {
			stops = append(stops, stop)
		}
	}
	return filters, closeAll, nil
}

func newFilter(ctx context.Context, e *runtime.Engine, fc *config.Filter, opts runtime.FilterOptions) (*runtime.Filter, error) {
	wasm, err := os.ReadFile(fc.Module)
	if err != nil {
		return nil, fmt.Errorf("filter %q: %w", fc.Name, err)
	}
	m, err := e.Compile(ctx, wasm)
	if err != nil {
		return nil, fmt.Errorf("filter %q: %w", fc.Name, err)
	}
	defer m.Close(ctx)
	return e.NewFilter(ctx, fc.Name, m, opts) // its errors name the filter
}

// filterOptions are the runtime options of a filter block.
func filterOptions(fc *config.Filter) runtime.FilterOptions {
	return runtime.FilterOptions{
		Config:      fc.Config,
		Timeout:     fc.Timeout,
		InitTimeout: fc.InitTimeout,
		BodyTimeout: fc.BodyTimeout, // zero: the timeout
		MemoryLimit: fc.Memory,
		PoolSize:    fc.Pool.Size,
		MaxBuffer:   runtimeMaxBuffer(fc.MaxBuffer),
		Reset:       runtimeReset(fc.Reset),
	}
}

// runtimeReset maps reset to FilterOptions.Reset.
func runtimeReset(s string) runtime.Reset {
	if s == "request" {
		return runtime.ResetRequest
	}
	return runtime.ResetNever
}

// ChainFor returns the Deps.Filters builder for one generation's filters.
func ChainFor(filters map[string]*runtime.Filter) func(names []string, next exchange.Handler) (exchange.Handler, error) {
	return func(names []string, next exchange.Handler) (exchange.Handler, error) {
		fs := make([]chain.Filter, 0, len(names))
		for _, n := range names {
			f, ok := filters[n]
			if !ok {
				return nil, fmt.Errorf("filter %q is not defined", n)
			}
			fs = append(fs, f)
		}
		return chain.New(fs, next), nil
	}
}

// ValidateFilters loads every filter of cfg as serving it would, without
// serving: it compiles each module and starts one instance with the
// filter's config (running the guest's setup, which reads and checks the
// config), then closes it. It returns a *FilterError for each filter that
// fails, joined. `sluice validate` uses it. The guest's log output is
// discarded, except what comes with a failed setup (runtime.SetupError).
func ValidateFilters(cfg *config.Config) error {
	if len(cfg.Filters) == 0 {
		return nil
	}
	ctx := context.Background()
	e, err := runtime.NewEngine(ctx, runtime.EngineOptions{
		CacheDir: cfg.Server.CacheDir,
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}
	defer e.Close(ctx)
	var errs []error
	for _, fc := range cfg.Filters {
		opts := filterOptions(fc)
		opts.PoolSize = 1 // a setup fails the same way in every instance
		f, err := newFilter(ctx, e, fc, opts)
		if err != nil {
			errs = append(errs, &FilterError{Filter: fc, Err: err})
			continue
		}
		_ = f.Close(ctx)
	}
	return errors.Join(errs...)
}

// FilterError is a filter that failed to load. Err names the filter; it
// wraps a *runtime.SetupError when the guest's setup failed (a config it
// rejects, say), else the module did not compile or could not start.
type FilterError struct {
	Filter *config.Filter
	Err    error
}

func (e *FilterError) Error() string { return e.Err.Error() }
func (e *FilterError) Unwrap() error { return e.Err }

// runtimeMaxBuffer maps max_buffer to FilterOptions.MaxBuffer, where zero
// is the default: "0B" (no body buffered) is negative there.
func runtimeMaxBuffer(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}
