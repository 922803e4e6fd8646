package host

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/sluicehq/sluice/host/handover"
)

// Errors of Upgrade that are about the instance's state, not the new
// binary.
var (
	// ErrUpgradeInProgress is returned while another upgrade waits for
	// its new process.
	ErrUpgradeInProgress = errors.New("upgrade: an upgrade is in progress")
	// ErrDraining is returned once the instance drains (it was replaced,
	// or it is stopping).
	ErrDraining = errors.New("upgrade: this process is draining")
)

// Upgrade replaces the running binary without refusing a connection, as
// nginx does on SIGUSR2: it starts the binary found at os.Executable's
// path again (with InstanceOptions.Args), hands it every listening
// socket (site listeners, their HTTP/3 sockets, the admin listener), and
// waits, for at most InstanceOptions.UpgradeTimeout, until the new
// process says it serves. Both processes accept on the same sockets
// meanwhile, so no connection is refused.
//
// On success Upgraded is closed and the caller retires this instance
// (Retire): it stops accepting and drains. On failure (the new binary
// does not start, exits, e.g. on a bad config, or is not ready in time
// and is killed) nothing has changed and the error says why.
func (i *Instance) Upgrade(ctx context.Context) (*handover.Process, error) {
	if !i.upgrade.TryLock() {
		return nil, ErrUpgradeInProgress
	}
	defer i.upgrade.Unlock()
	select {
	case <-i.upgraded:
		return nil, ErrDraining
	default:
	}
	if i.srv.Draining() || i.tel.draining.Load() {
		return nil, ErrDraining
	}
	path, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("upgrade: %w", err)
	}
	files, err := i.srv.handoverFiles()
	if err != nil {
		return nil, fmt.Errorf("upgrade: %w", err)
	}
	defer closeFiles(files)
	if a := i.tel.admin; a != nil {
		c := a.Conn()
		if c == nil {
			return nil, errors.New("upgrade: the admin listener cannot be handed over")
		}
		f, err := handover.Dup(c, handover.Name("admin", i.tel.adminListen()))
		if err != nil {
			return nil, fmt.Errorf("upgrade: admin: %w", err)
		}
		files = append(files, f)
	}
	ctx, cancel := context.WithTimeout(ctx, i.upTime)
	defer cancel()
	i.log.Info("upgrade: starting the new binary", "path", path, "sockets", len(files))
	p, err := handover.Start(ctx, path, i.args, files)
	if err != nil {
		i.log.Error("upgrade failed; this process keeps serving", "error", err)
		return nil, err
	}
	// Under systemd the new process becomes the service's main process.
	if _, err := handover.Notify(fmt.Sprintf("MAINPID=%d", p.Pid)); err != nil {
		i.log.Warn("upgrade: telling systemd the new main pid", "error", err)
	}
	i.log.Info("upgrade: the new process serves; this one drains", "pid", p.Pid)
	close(i.upgraded)
	return p, nil
}

// Upgraded is closed once an upgrade succeeded: a successor serves on
// this instance's sockets, and this instance should Retire.
func (i *Instance) Upgraded() <-chan struct{} { return i.upgraded }

// Retire drains and stops an instance whose sockets a successor took
// over: as Shutdown, but the admin API stops at once (the successor
// answers it on the same socket) and there is no shutdown delay (the
// successor is ready, load balancers see no change). Long-lived
// connections run on until ctx ends.
func (i *Instance) Retire(ctx context.Context) error {
	err := i.tel.retire(ctx, i.srv.Shutdown)
	if i.wasm != nil {
		err = errors.Join(err, i.wasm.Close(ctx))
	}
	return err
}
