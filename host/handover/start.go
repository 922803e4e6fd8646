package handover

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// File is a socket to hand over: a duplicate of its descriptor and its
// LISTEN_FDNAMES entry (Name).
type File struct {
	Name string
	File *os.File
}

// Process is a successor that reported ready.
type Process struct {
	Pid int
	// Exited is closed when the process has exited (and was reaped).
	Exited <-chan struct{}
}

// Start runs path with args and the sockets files, environment and
// standard streams of this process, and waits until the new process
// reports ready (Sockets.Ready), exits, or ctx ends. Only a ready
// process is left running: one that is not ready by ctx's deadline is
// killed, and the error says why it failed (with the STATUS= it sent,
// if any). files stay the caller's to close.
func Start(ctx context.Context, path string, args []string, files []File) (*Process, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	names := make([]string, 0, len(files)+1)
	extra := make([]*os.File, 0, len(files)+1)
	for _, f := range files {
		names = append(names, f.Name)
		extra = append(extra, f.File)
	}
	names = append(names, readyName)
	extra = append(extra, w)

	cmd := exec.Command(path, args...)
	cmd.Env = append(environ(),
		fdsEnv+"="+strconv.Itoa(len(extra)),
		namesEnv+"="+strings.Join(names, ":"),
		UpgradeEnv+"="+strconv.Itoa(os.Getpid()))
	cmd.ExtraFiles = extra
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Its own process group, so that a failed start is stopped whole
	// (a wrapper script and what it ran), and not by our terminal's ^C.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	_ = w.Close() // the child has its own; EOF on r once it exits
	if err != nil {
		return nil, fmt.Errorf("upgrade: start %s: %w", path, err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()

	type report struct {
		ready  bool
		status string
	}
	reports := make(chan report, 1)
	go func() {
		var rep report
		sc := bufio.NewScanner(io.LimitReader(r, 64<<10))
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), "=")
			switch k {
			case "READY":
				rep.ready = v == "1"
			case "STATUS":
				rep.status = v
			}
			if rep.ready {
				break
			}
		}
		reports <- rep
	}()

	fail := func(why string) error {
		err := fmt.Errorf("upgrade: %s (pid %d) %s", path, cmd.Process.Pid, why)
		select {
		case rep := <-reports:
			if rep.status != "" {
				err = fmt.Errorf("%w: %s", err, rep.status)
			}
		case <-time.After(100 * time.Millisecond):
		}
		return err
	}
	select {
	case rep := <-reports:
		if rep.ready {
			return &Process{Pid: cmd.Process.Pid, Exited: exited}, nil
		}
		// The pipe closed without READY=1: the process is exiting.
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			kill(cmd.Process.Pid)
			<-exited
		}
		err := fmt.Errorf("upgrade: %s (pid %d) exited before it was ready: %v", path, cmd.Process.Pid, exitText(waitErr))
		if rep.status != "" {
			err = fmt.Errorf("%w: %s", err, rep.status)
		}
		return nil, err
	case <-exited:
		kill(cmd.Process.Pid) // what it left behind in its group
		return nil, fail("exited before it was ready: " + exitText(waitErr))
	case <-ctx.Done():
		kill(cmd.Process.Pid)
		<-exited
		return nil, fail(fmt.Sprintf("was not ready in time (%v); killed", context.Cause(ctx)))
	}
}

// kill stops a failed successor's process group.
func kill(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.String()
	}
	return err.Error()
}

// environ is this process's environment less the variables of socket
// activation, which Start sets afresh.
func environ() []string {
	env := os.Environ()
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case fdsEnv, namesEnv, pidEnv, UpgradeEnv:
			continue
		}
		out = append(out, kv)
	}
	return out
}

// Dup returns a duplicate of a socket's descriptor to hand over, named
// name. Unlike net's File methods it leaves the socket non-blocking:
// the flag belongs to the socket, shared with the duplicate and with
// the new process, and os/exec's Fd on a File from those methods would
// turn it blocking, so that this process's accept could no longer be
// interrupted by a close.
func Dup(c syscall.Conn, name string) (File, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return File{}, err
	}
	nfd := -1
	cerr := rc.Control(func(fd uintptr) {
		nfd, err = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	})
	if err = errors.Join(cerr, err); err != nil {
		return File{}, fmt.Errorf("dup %s: %w", name, err)
	}
	return File{Name: name, File: os.NewFile(uintptr(nfd), name)}, nil
}
