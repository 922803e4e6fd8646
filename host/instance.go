package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/admin"
	"github.com/sluicehq/sluice/host/admin/status"
	"github.com/sluicehq/sluice/host/generation"
	"github.com/sluicehq/sluice/host/handover"
	"github.com/sluicehq/sluice/host/tlsconf"
	"github.com/sluicehq/sluice/runtime"
	"go.opentelemetry.io/otel/trace"
)

// Instance is a running sluice: a server, the config it runs, and what
// reloads it. The CLI makes one; so do the examples' tests.
type Instance struct {
	log   *slog.Logger
	srv   *Server
	path  string // "" when started from an in-memory config
	deps  generation.Deps
	delay time.Duration   // InstanceOptions.ShutdownDelay
	tel   *telemetry      // metrics, traces, access log, admin API
	wasm  *runtime.Engine // created with the first filter; outlives generations

	cfg    atomic.Pointer[config.Config]
	reload sync.Mutex // one reload at a time; never taken on the request path

	sockets  *handover.Sockets // inherited (InstanceOptions.Sockets)
	args     []string          // a successor's arguments (InstanceOptions.Args)
	upTime   time.Duration     // InstanceOptions.UpgradeTimeout
	upgrade  sync.Mutex        // one upgrade at a time
	upgraded chan struct{}     // closed once a successor serves

	started time.Time       // for the status page's uptime
	reloads *status.Reloads // the generation history (status page)
	sampler status.Sampler  // recent rates of upstreams and filters
	certs   certCache       // the serving certificates, read at most every certEvery
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
	// ShutdownDelay is how long Shutdown reports not-ready (/readyz 503)
	// before it stops accepting, so load balancers stop sending first.
	// Zero means the config's server.shutdown_delay (default none).
	ShutdownDelay time.Duration
	// Sockets are listening sockets inherited from systemd or from the
	// sluice this one replaces (handover.FromEnv). A listener, HTTP/3
	// socket or admin listener whose address one matches takes it
	// instead of binding; the ones no listener takes are closed.
	Sockets *handover.Sockets
	// Args are the arguments Upgrade starts the new binary with
	// (os.Args[1:] when nil). The binary is os.Executable, looked up
	// again at each upgrade, so a binary replaced on disk is the one run.
	Args []string
	// UpgradeTimeout bounds how long Upgrade waits for the new process to
	// be ready; zero means DefaultUpgradeTimeout.
	UpgradeTimeout time.Duration
}

// DefaultUpgradeTimeout is how long an upgrade waits for the new
// process to be ready when InstanceOptions.UpgradeTimeout is zero.
const DefaultUpgradeTimeout = 60 * time.Second

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
	i := &Instance{log: o.Log, srv: NewServer(o.Log), path: o.Path, delay: o.ShutdownDelay,
		sockets: o.Sockets, args: o.Args, upTime: o.UpgradeTimeout, upgraded: make(chan struct{}),
		started: time.Now(), reloads: status.NewReloads(o.Path)}
	i.srv.inherit = o.Sockets
	if i.args == nil && len(os.Args) > 0 {
		i.args = os.Args[1:]
	}
	if i.upTime <= 0 {
		i.upTime = DefaultUpgradeTimeout
	}
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
	tel, err := newTelemetry(cfg, o.Log)
	if err != nil {
		return nil, err
	}
	i.tel = tel
	i.srv.early = tel.obs.WrapEarly
	// The telemetry's logger also exports to OTLP when the config says so.
	i.log, i.srv.log = tel.log, tel.log
	i.deps = i.newDeps()
	if err := i.apply(cfg); err != nil {
		_ = tel.close(context.Background())
		return nil, err
	}
	i.reloads.Loaded(time.Now(), nil)
	if err := tel.startAdmin(i.adminOptions(), i.certificates); err != nil {
		_ = i.srv.Shutdown(context.Background())
		_ = tel.close(context.Background())
		return nil, err
	}
	for _, name := range o.Sockets.CloseUnused() {
		i.log.Warn("inherited socket matches no listen address; closed", "socket", name)
	}
	return i, nil
}

func load(path string) (*config.Config, error) {
	cfg, files, diags := config.LoadFiles(path)
	if !diags.HasErrors() {
		// Build what can be built without starting, so that a bad
		// certificate or CA file is refused with its position.
		diags = append(diags, generation.Validate(cfg)...)
	}
	if diags.HasErrors() {
		return nil, &DiagnosticsError{Diags: diags, Files: files}
	}
	return cfg, nil
}

func (i *Instance) newDeps() generation.Deps {
	return generation.Deps{Log: i.log, Wrap: i.tel.wrap, Upstream: i.tel.upstream}
}

// engine returns the process's Wasm engine, creating it on first use.
// It outlives generations: compiled modules are shared across reloads.
func (i *Instance) engine(cfg *config.Config) (*runtime.Engine, error) {
	if i.wasm != nil {
		return i.wasm, nil
	}
	e, err := runtime.NewEngine(context.Background(), runtime.EngineOptions{
		CacheDir:       cfg.Server.CacheDir,
		Logger:         i.tel.guestLogs(i.log),
		TracerProvider: i.tracerProvider(),
		Observer:       i.filterObserver(),
	})
	if err != nil {
		return nil, fmt.Errorf("wasm engine: %w", err)
	}
	i.wasm = e
	return e, nil
}

func (i *Instance) apply(cfg *config.Config) error {
	d := i.deps
	d.Engine = func() (*runtime.Engine, error) { return i.engine(cfg) }
	g, err := generation.Build(cfg, d)
	if err != nil {
		return err
	}
	if err := i.srv.Apply(g); err != nil {
		g.Close(i.log)
		return err
	}
	i.cfg.Store(cfg)
	return nil
}

// adminOptions are the admin API's calls into the instance (telemetry
// adds its own settings: startAdmin).
func (i *Instance) adminOptions() admin.Options {
	o := admin.Options{
		Reload: func() error {
			err := i.Reload()
			var d *DiagnosticsError
			if errors.As(err, &d) {
				return admin.Invalid(err)
			}
			return err
		},
		Config: func() any {
			if c := i.Config(); c != nil {
				return c.Redacted()
			}
			return nil
		},
		Filters: func() any { return i.Status().Filters },
		Status:  i.Status,
		Upgrade: func() (string, error) {
			p, err := i.Upgrade(context.Background())
			if errors.Is(err, ErrUpgradeInProgress) || errors.Is(err, ErrDraining) {
				return "", admin.Conflict(err)
			}
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("upgraded: pid %d serves; pid %d drains\n", p.Pid, os.Getpid()), nil
		},
		Ready: func() bool { return !i.srv.Draining() },
	}
	if c := i.Config(); c != nil && c.Admin != nil { // an inherited admin socket is taken only for an admin API
		o.Listener, _ = i.sockets.Listener("admin", i.tel.adminListen())
	}
	return o
}

// certificates lists the certificates of the serving generation.
func (i *Instance) certificates() []tlsconf.Certificate {
	if g := i.srv.Current(); g != nil {
		return g.Certificates()
	}
	return nil
}

// FilterStats reports the filters of the serving generation (admin
// /filters).
func (i *Instance) FilterStats() []runtime.FilterStats {
	g := i.srv.Current()
	if g == nil {
		return nil
	}
	out := make([]runtime.FilterStats, 0, len(g.Filters))
	for _, fc := range i.cfg.Load().Filters {
		if f, ok := g.Filters[fc.Name]; ok {
			out = append(out, f.Stats())
		}
	}
	return out
}

func (i *Instance) tracerProvider() trace.TracerProvider { return i.tel.tracerProvider() }
func (i *Instance) filterObserver() runtime.Observer     { return i.tel.filterObserver() }

// Reload reads the config file again and swaps in a new generation. On
// any problem the running generation keeps serving and the error says why
// (a *DiagnosticsError for config problems).
func (i *Instance) Reload() (err error) {
	i.reload.Lock()
	defer i.reload.Unlock()
	defer func() { i.tel.reloaded(err); i.reloads.Loaded(time.Now(), err) }()
	_, _ = handover.Notify(handover.Reloading())
	defer handover.Notify("READY=1")
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
	i.tel.applied(cfg)
	i.log.Info("reloaded", "file", i.path)
	return nil
}

// Config returns the running config.
func (i *Instance) Config() *config.Config { return i.cfg.Load() }

// Server returns the underlying server (listeners, generations).
func (i *Instance) Server() *Server { return i.srv }

// Shutdown drains and stops the instance.
func (i *Instance) Shutdown(ctx context.Context) error {
	_, _ = handover.Notify("STOPPING=1")
	err := i.tel.shutdown(ctx, i.delay, i.srv.Shutdown)
	if i.wasm != nil {
		err = errors.Join(err, i.wasm.Close(ctx))
	}
	return err
}
