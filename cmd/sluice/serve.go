package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host"
	"github.com/sluicehq/sluice/host/generation"
	"github.com/sluicehq/sluice/host/handover"
	"github.com/sluicehq/sluice/runtime"
)

func newFlags(name, args, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: sluice %s %s\n\n%s\n", name, args, about)
		var has bool
		fs.VisitAll(func(*flag.Flag) { has = true })
		if has {
			fmt.Fprintln(fs.Output(), "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parse parses flags; it returns -1 to go on, else the exit code.
func parse(fs *flag.FlagSet, args []string) int {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "sluice %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return 2
	}
	return -1
}

func logger(level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}

func cmdServe(args []string) int {
	fs := newFlags("serve", "[-c FILE.hcl] [--pid-file FILE]", `Run a config. SIGHUP reloads it (a bad config is refused and the running
one keeps serving); SIGUSR1 reopens the access log (rotation); SIGUSR2
upgrades the binary (sluice upgrade); SIGTERM and SIGINT drain in-flight
requests and exit 0.
Sockets passed by systemd (socket activation, LISTEN_FDS) serve the listen
addresses they are bound to; readiness, reloads and stopping are reported
to systemd (sd_notify) when NOTIFY_SOCKET is set.
With no config, serve the current directory on 127.0.0.1:8080 from the
embedded default config.`)
	file := fs.String("c", "", "config `file` (HCL)")
	fs.StringVar(file, "config", "", "config `file` (same as -c)")
	level := fs.String("log-level", "info", "log `level`: debug, info, warn, error")
	fs.StringVar(&pidFile.path, "pid-file", "", "write the process id to `file` once serving (an upgrade's new process rewrites it)")
	upTimeout := fs.Duration("upgrade-timeout", host.DefaultUpgradeTimeout, "how long an upgrade waits for the new process to be ready before it stops it")
	if rc := parse(fs, args); rc >= 0 {
		return rc
	}
	log := logger(*level)
	opts := host.InstanceOptions{Log: log, UpgradeTimeout: *upTimeout}
	if *file != "" {
		opts.Path = *file
	} else {
		dir, err := os.Getwd()
		if err != nil {
			fmt.Fprintln(os.Stderr, "sluice:", err)
			return 1
		}
		opts.Config = config.Default(dir, "127.0.0.1:8080", false)
		fmt.Fprintf(os.Stderr, "sluice: no config given: serving %s on http://127.0.0.1:8080 (embedded default config)\n", dir)
	}
	return run(opts, log)
}

func cmdFileServer(args []string) int {
	fs := newFlags("file-server", "--root DIR [--listen ADDR] [--browse]", "Serve a directory over HTTP.")
	root := fs.String("root", ".", "`directory` to serve")
	listen := fs.String("listen", "127.0.0.1:8080", "`address` to listen on")
	browse := fs.Bool("browse", false, "list directories without an index file")
	level := fs.String("log-level", "info", "log `level`: debug, info, warn, error")
	if rc := parse(fs, args); rc >= 0 {
		return rc
	}
	dir, err := filepath.Abs(*root)
	if err == nil {
		var st os.FileInfo
		if st, err = os.Stat(dir); err == nil && !st.IsDir() {
			err = fmt.Errorf("%s is not a directory", dir)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sluice file-server:", err)
		return 1
	}
	log := logger(*level)
	fmt.Fprintf(os.Stderr, "sluice: serving %s on http://%s\n", dir, displayAddr(*listen))
	return run(host.InstanceOptions{Log: log, Config: config.Default(dir, *listen, *browse)}, log)
}

func displayAddr(a string) string {
	if strings.HasPrefix(a, ":") {
		return "localhost" + a
	}
	return a
}

// run starts an instance and serves until SIGTERM or SIGINT, or until
// an upgrade (SIGUSR2, POST /upgrade) hands its sockets to a new process.
// It takes the sockets passed by systemd or by the sluice it replaces,
// and tells both when it serves (sd_notify READY=1).
func run(opts host.InstanceOptions, log *slog.Logger) int {
	bi, _ := debug.ReadBuildInfo()
	host.SetBuild(resolveVersion(version, commit, bi))
	socks, err := handover.FromEnv()
	if err != nil {
		log.Warn("inherited sockets", "error", err)
	}
	opts.Sockets = socks
	// Signals are ours before the first listener serves: a SIGINT or
	// SIGTERM sent once a request was answered must drain, not kill (the
	// default action) in the window before run reaches its loop.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1, syscall.SIGUSR2)
	inst, err := host.Start(opts)
	if err != nil {
		signal.Stop(sigs)
		var de *host.DiagnosticsError
		if errors.As(err, &de) {
			fmt.Fprint(os.Stderr, de.Error())
		} else {
			fmt.Fprintln(os.Stderr, "sluice:", err)
		}
		_ = socks.Failed(err)
		_, _ = handover.Notify("STATUS=" + firstLine(err.Error()))
		return 1
	}
	trimStartup()
	if err := pidFile.write(); err != nil {
		log.Warn("pid file", "error", err)
	}
	defer pidFile.remove()
	if err := socks.Ready(); err != nil {
		log.Warn("telling the old process we serve", "error", err)
	}
	if _, err := handover.Notify(fmt.Sprintf("READY=1\nMAINPID=%d", os.Getpid())); err != nil {
		log.Warn("sd_notify", "error", err)
	}
	drain := func(ctx context.Context) {}
	for {
		var sig os.Signal
		select {
		case sig = <-sigs:
		case <-inst.Upgraded():
			sig = syscall.SIGUSR2
		}
		switch sig {
		case syscall.SIGHUP:
			_ = inst.Reload()
			trimStartup() // the new config's parsing touched the same pages
			continue
		case syscall.SIGUSR1: // log rotation: reopen the access log file
			if err := inst.ReopenLogs(); err != nil {
				log.Error("reopening logs", "error", err)
			}
			continue
		case syscall.SIGUSR2:
			select {
			case <-inst.Upgraded(): // upgraded: drain below
			default:
				go func() { _, _ = inst.Upgrade(context.Background()) }() // logs its outcome
				continue
			}
			log.Info("draining: a new process took over the sockets")
			pidFile.handedOver()
			drain = func(ctx context.Context) {
				if err := inst.Retire(ctx); err != nil {
					log.Warn("shutdown", "error", err)
				}
			}
		default:
			log.Info("draining", "signal", sig.String())
			drain = func(ctx context.Context) {
				if err := inst.Shutdown(ctx); err != nil {
					log.Warn("shutdown", "error", err)
				}
			}
		}
		break
	}
	timeout := inst.Config().Server.ShutdownTimeout
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	go func() { // a second SIGTERM or SIGINT stops at once
		for sig := range sigs {
			if sig == syscall.SIGTERM || sig == syscall.SIGINT {
				log.Warn("second signal: exiting without draining")
				os.Exit(1)
			}
		}
	}()
	drain(ctx)
	log.Info("stopped")
	return 0
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func cmdValidate(args []string) int { return validate(args, os.Stderr) }

// validate checks a config and writes its problems (or "valid") to w.
func validate(args []string, w io.Writer) int {
	fs := newFlags("validate", "-c FILE.hcl", `Check a config without running it: parse, check every block, compile
every filter module and start one instance of each filter with its config
(the guest's setup checks the config as serve would), and build every
handler and certificate as serve would, starting nothing (no listener,
health check or ACME order). Exit 0 when it is
valid; else print each problem as FILE:LINE:COL: message, with the
offending line, and exit 1.`)
	fs.SetOutput(w)
	file := fs.String("c", "", "config `file` (HCL)")
	fs.StringVar(file, "config", "", "config `file` (same as -c)")
	if rc := parse(fs, args); rc >= 0 {
		return rc
	}
	if *file == "" {
		fmt.Fprintln(w, "sluice validate: -c FILE is required")
		return 2
	}
	cfg, files, diags := config.LoadFiles(*file)
	if !diags.HasErrors() {
		diags = append(diags, validateFilters(cfg)...)
		diags = append(diags, generation.Validate(cfg)...)
	}
	if len(diags) > 0 {
		fmt.Fprint(w, config.FormatDiagnostics(diags, files))
	}
	if diags.HasErrors() {
		return 1
	}
	fmt.Fprintf(w, "%s: valid\n", *file)
	return 0
}

func cmdFmt(args []string) int {
	fs := newFlags("fmt", "[-w] FILE.hcl", "Print a config in canonical format, or rewrite it in place with -w.")
	write := fs.Bool("w", false, "write the result to the file instead of standard output")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	name := fs.Arg(0)
	src, err := os.ReadFile(name)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sluice fmt:", err)
		return 1
	}
	out, err := config.Format(src)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sluice fmt: %s: %v\n", name, err)
		return 1
	}
	if !*write {
		os.Stdout.Write(out)
		return 0
	}
	if string(out) == string(src) {
		return 0
	}
	st, err := os.Stat(name)
	if err == nil {
		err = os.WriteFile(name, out, st.Mode().Perm())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sluice fmt:", err)
		return 1
	}
	return 0
}

func cmdReload(args []string) int {
	fs := newFlags("reload", "[-c FILE.hcl | --admin ADDR] [--token TOKEN]", "Ask a running server to reload its config (POST /reload on its admin listener).\nWith -c, the admin address and token are the config's.")
	a := newAdminFlags(fs)
	if rc := parse(fs, args); rc >= 0 {
		return rc
	}
	if err := a.resolve(); err != nil {
		fmt.Fprintln(os.Stderr, "sluice reload:", err)
		return 1
	}
	return adminPost("reload", *a.addr, *a.token, "/reload", 60*time.Second)
}

// validateFilters loads every filter as serving would (compile, then one
// instance running the guest's setup with its config) and reports each
// failure: a failed setup at the filter's `config` attribute, anything
// else at its `module` attribute.
func validateFilters(cfg *config.Config) hcl.Diagnostics {
	err := generation.ValidateFilters(cfg)
	if err == nil {
		return nil
	}
	var diags hcl.Diagnostics
	for _, e := range unjoin(err) {
		var fe *generation.FilterError
		if errors.As(e, &fe) {
			summary, r := "Invalid filter module", fe.Filter.ModuleRange
			var se *runtime.SetupError
			if errors.As(fe.Err, &se) {
				summary, r = "Filter setup failed", fe.Filter.ConfigRange
			}
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  summary,
				Detail:   fe.Err.Error(),
				Subject:  &r,
			})
			continue
		}
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Filters unavailable", Detail: e.Error()})
	}
	return diags
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
