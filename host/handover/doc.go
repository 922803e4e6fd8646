// Package handover is how listening sockets reach a sluice process from
// outside and how it says it is ready: systemd socket activation, the
// zero-downtime binary upgrade, and sd_notify.
//
// Both ways in share one convention, systemd's: the sockets are file
// descriptors 3, 4, … and the environment says how many (LISTEN_FDS) and
// what each is (LISTEN_FDNAMES). Sockets reads them once at start
// (FromEnv); the host takes each by the listen address it is configured
// with (Sockets.Listener, Sockets.PacketConn). A socket from systemd is
// matched by the address it is bound to; one from the sluice being
// replaced by its name, which carries the configured address, so that
// a configured port 0 is still matched.
//
// The upgrade (Start) runs the new binary with the old process's sockets
// and a readiness pipe, and waits until the new process writes READY=1
// to it (Sockets.Ready), exits, or misses the deadline. Readiness to
// systemd goes over NOTIFY_SOCKET (Notify) with the same words.
//
// Where it sits: before the request path. Nothing here runs per request.
// handover imports only the standard library.
package handover
