package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"
	"github.com/sluicehq/sluice/config"
)

// Instance is a running sluice: a server, the config it runs, and what
// reloads it. The CLI makes one; so do the examples' tests.
type Instance struct {
	log  *slog.Logger
	srv  *Server
	path string // "" when started from an in-memory config
	deps Deps

	cfg    atomic.Pointer[config.Config]
	reload sync.Mutex // one reload at a time; never taken on the request path
}

// InstanceOptions configure Start.
type InstanceOptions struct {
	// Path is the config file, reloaded by Reload. Empty means Config is
	// used and Reload re-applies it.
	Path string
	// Config is used when Path is empty.
	Config *config.Config
	// Log receives server events; nil means slog.Default().
	Log *slog.Logger
}

// DiagnosticsError is a config that did not load: its problems, and the
// sources to print them with.
type DiagnosticsError struct {
	Diags hcl.Diagnostics
	Files map[string][]byte
}

func (e *DiagnosticsError) Error() string {
	return config.FormatDiagnostics(e.Diags, e.Files)
}

// Start loads the config, builds the first generation and starts
// listening.
func Start(o InstanceOptions) (*Instance, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	i := &Instance{log: o.Log, srv: NewServer(o.Log), path: o.Path}
	cfg := o.Config
	if o.Path != "" {
		var err error
		if cfg, err = load(o.Path); err != nil {
			return nil, err
		}
	}
	if cfg == nil {
		return nil, errors.New("host: no config")
	}
	i.deps = i.newDeps()
	if err := i.apply(cfg); err != nil {
		return nil, err
	}
	return i, nil
}

func load(path string) (*config.Config, error) {
	cfg, files, diags := config.LoadFiles(path)
	if diags.HasErrors() {
		return nil, &DiagnosticsError{Diags: diags, Files: files}
	}
	return cfg, nil
}

func (i *Instance) newDeps() Deps {
	return Deps{Log: i.log}
}

func (i *Instance) apply(cfg *config.Config) error {
	g, err := Build(cfg, i.deps)
	if err != nil {
		return err
	}
	if err := i.srv.Apply(g); err != nil {
		g.close(i.log)
		return err
	}
	i.cfg.Store(cfg)
	return nil
}

// Reload reads the config file again and swaps in a new generation. On
// any problem the running generation keeps serving and the error says why
// (a *DiagnosticsError for config problems).
func (i *Instance) Reload() error {
	i.reload.Lock()
	defer i.reload.Unlock()
	cfg := i.cfg.Load()
	if i.path != "" {
		var err error
		if cfg, err = load(i.path); err != nil {
			i.log.Error("reload refused; the running config keeps serving", "file", i.path, "error", err)
			return err
		}
	}
	if err := i.apply(cfg); err != nil {
		i.log.Error("reload failed; the running config keeps serving", "error", err)
		return fmt.Errorf("reload: %w", err)
	}
	i.log.Info("reloaded", "file", i.path)
	return nil
}

// Config returns the running config.
func (i *Instance) Config() *config.Config { return i.cfg.Load() }

// Server returns the underlying server (listeners, generations).
func (i *Instance) Server() *Server { return i.srv }

// Shutdown drains and stops the instance.
func (i *Instance) Shutdown(ctx context.Context) error {
	return i.srv.Shutdown(ctx)
}
