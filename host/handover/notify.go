package handover

import (
	"net"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// NotifyEnv names the service manager's notification socket
// (sd_notify(3)).
const NotifyEnv = "NOTIFY_SOCKET"

// Notify sends state ("READY=1", "RELOADING=1", "STOPPING=1",
// "MAINPID=…", "STATUS=…", lines joined by "\n") to the service manager,
// as sd_notify(3) does: one datagram to the unix socket NOTIFY_SOCKET
// names ('@' first: an abstract one). sent is false, with no error, when
// the variable is unset (not run by systemd with Type=notify).
func Notify(state string) (sent bool, err error) {
	path := os.Getenv(NotifyEnv)
	if path == "" {
		return false, nil
	}
	if path[0] == '@' {
		path = "\x00" + path[1:]
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return false, err
	}
	defer c.Close()
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte(state)); err != nil {
		return false, err
	}
	return true, nil
}

// Reloading is the state a reload begins with: RELOADING=1 and the
// CLOCK_MONOTONIC time systemd asks for with it (Type=notify-reload).
func Reloading() string {
	return "RELOADING=1\nMONOTONIC_USEC=" + strconv.FormatInt(monotonicUsec(), 10)
}

// monotonicUsec is CLOCK_MONOTONIC in microseconds, the clock systemd
// compares MONOTONIC_USEC with.
func monotonicUsec() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return ts.Nano() / 1e3
}
