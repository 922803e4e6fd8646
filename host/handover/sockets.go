package handover

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
)

// The environment of socket activation (sd_listen_fds(3)). A sluice
// starting its successor sets UpgradeEnv to its own pid instead of
// LISTEN_PID, which it cannot know before the child exists; the child
// checks it against its parent.
const (
	fdsEnv     = "LISTEN_FDS"
	namesEnv   = "LISTEN_FDNAMES"
	pidEnv     = "LISTEN_PID"
	UpgradeEnv = "SLUICE_UPGRADE_PARENT"
	firstFD    = 3
	// Handover names start with a '/', which no unit name (systemd's
	// default FileDescriptorName, e.g. "sluice.socket") has.
	readyName  = "sluice/ready"
	namePrefix = "sluice/"
)

// Name is the LISTEN_FDNAMES entry of a socket a sluice hands over:
// kind ("tcp" for a site listener, "udp" for its HTTP/3 side, "admin")
// and the listen address as configured. The address is escaped: a name
// must not hold the separator ':'.
func Name(kind, addr string) string {
	return namePrefix + kind + "/" + url.QueryEscape(addr)
}

// Sockets are the sockets this process inherited. The zero value and nil
// hold none. Each socket is taken at most once; the ones nobody took are
// closed by CloseUnused.
type Sockets struct {
	// Upgrade is true when the sockets came from the sluice this process
	// replaces (false: systemd, or none).
	Upgrade bool

	mu    sync.Mutex
	socks []*socket
	ready *os.File // the upgrade's readiness pipe; nil after Ready or Failed
}

type socket struct {
	name string
	ln   net.Listener   // a stream socket
	pc   net.PacketConn // a datagram socket
	used bool
}

// FromEnv takes the sockets passed to this process, if the environment
// says there are any and that they are for this process (LISTEN_PID is
// our pid, or UpgradeEnv is our parent's), and clears that environment
// so no child of ours reads it again. The descriptors are taken over:
// duplicated close-on-exec and the originals closed.
func FromEnv() (*Sockets, error) {
	env := func(k string) string { v := os.Getenv(k); os.Unsetenv(k); return v }
	nfds, names, pid, parent := env(fdsEnv), env(namesEnv), env(pidEnv), env(UpgradeEnv)
	s := &Sockets{}
	switch {
	case nfds == "":
		return s, nil
	case pid != "" && pid == strconv.Itoa(os.Getpid()):
	case pid == "" && parent != "" && parent == strconv.Itoa(os.Getppid()):
		s.Upgrade = true
	default:
		return s, nil // meant for another process
	}
	n, err := strconv.Atoi(nfds)
	if err != nil || n < 0 || n > 1024 {
		return s, fmt.Errorf("socket activation: %s=%q: not a count", fdsEnv, nfds)
	}
	var nameList []string
	if names != "" {
		nameList = strings.Split(names, ":")
	}
	files := make([]File, 0, n)
	var errs []error
	for i := range n {
		fd := firstFD + i
		name := ""
		if i < len(nameList) {
			name = nameList[i]
		}
		f := os.NewFile(uintptr(fd), name)
		if f == nil {
			errs = append(errs, fmt.Errorf("socket activation: fd %d: not open", fd))
			continue
		}
		files = append(files, File{Name: name, File: f})
	}
	got, err := FromFiles(files)
	got.Upgrade = s.Upgrade
	return got, errors.Join(append(errs, err)...)
}

// FromFiles takes over files as inherited sockets (closing each file),
// named as in LISTEN_FDNAMES; FromEnv's files, or a test's.
func FromFiles(files []File) (*Sockets, error) {
	s := &Sockets{}
	var errs []error
	for _, nf := range files {
		f, name := nf.File, nf.Name
		if name == readyName {
			s.ready = f
			continue
		}
		sk := &socket{name: name}
		var err error
		if sk.ln, err = net.FileListener(f); err != nil {
			if sk.pc, err = net.FilePacketConn(f); err != nil {
				errs = append(errs, fmt.Errorf("socket activation: fd %d (%q): not a socket sluice can listen on: %w", f.Fd(), name, err))
			}
		}
		_ = f.Close()
		if sk.ln != nil || sk.pc != nil {
			s.socks = append(s.socks, sk)
		}
	}
	return s, errors.Join(errs...)
}

// Listener returns the inherited stream socket for a listen address as
// configured: kind "tcp" (a site listener) or "admin". ok is false when
// there is none.
func (s *Sockets) Listener(kind, addr string) (ln net.Listener, ok bool) {
	sk := s.take(kind, addr, true)
	if sk == nil {
		return nil, false
	}
	return sk.ln, true
}

// PacketConn returns the inherited datagram socket for a listen address
// as configured (a listener's HTTP/3 side).
func (s *Sockets) PacketConn(addr string) (pc net.PacketConn, ok bool) {
	sk := s.take("udp", addr, false)
	if sk == nil {
		return nil, false
	}
	return sk.pc, true
}

// take finds a socket by its handover name, or else (a socket named by
// systemd) by its bound address.
func (s *Sockets) take(kind, addr string, stream bool) *socket {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	want := Name(kind, addr)
	for _, sk := range s.socks {
		if !sk.used && sk.name == want && (sk.ln != nil) == stream {
			sk.used = true
			return sk
		}
	}
	for _, sk := range s.socks {
		if sk.used || strings.HasPrefix(sk.name, namePrefix) || (sk.ln != nil) != stream {
			continue
		}
		var bound net.Addr
		if stream {
			bound = sk.ln.Addr()
		} else {
			bound = sk.pc.LocalAddr()
		}
		if Matches(addr, bound) {
			sk.used = true
			return sk
		}
	}
	return nil
}

// Matches reports whether a socket bound to bound serves the listen
// address addr as configured: the same port, and the same IP, where a
// host that is empty or unspecified ("0.0.0.0", "::") matches a
// wildcard socket and a name matches any address it resolves to. Port 0
// matches nothing.
func Matches(addr string, bound net.Addr) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	var ip net.IP
	var bport int
	switch b := bound.(type) {
	case *net.TCPAddr:
		ip, bport = b.IP, b.Port
	case *net.UDPAddr:
		ip, bport = b.IP, b.Port
	default:
		return false
	}
	p, err := net.LookupPort("tcp", port)
	if err != nil || p == 0 || p != bport {
		return false
	}
	if host == "" {
		return ip.IsUnspecified()
	}
	if want := net.ParseIP(host); want != nil {
		return want.Equal(ip) || (want.IsUnspecified() && ip.IsUnspecified())
	}
	ips, err := net.LookupIP(host)
	if err != nil {
		return false
	}
	for _, a := range ips {
		if a.Equal(ip) {
			return true
		}
	}
	return false
}

// CloseUnused closes the inherited sockets nobody took (a listen address
// no longer configured) and returns their names or addresses.
func (s *Sockets) CloseUnused() []string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var closed []string
	for _, sk := range s.socks {
		if sk.used {
			continue
		}
		sk.used = true
		name := sk.name
		if sk.ln != nil {
			name += " " + sk.ln.Addr().String()
			_ = sk.ln.Close()
		} else {
			name += " " + sk.pc.LocalAddr().String()
			_ = sk.pc.Close()
		}
		closed = append(closed, strings.TrimSpace(name))
	}
	return closed
}

// Ready tells the sluice that started this one (an upgrade) that it
// serves: READY=1 on the readiness pipe. Without one it does nothing.
func (s *Sockets) Ready() error { return s.report("READY=1\n") }

// Failed tells the sluice that started this one why it will not be
// ready (STATUS= and the error's first line, shown by the old process
// and `sluice upgrade`; the rest went to the shared standard error). The
// caller exits next.
func (s *Sockets) Failed(err error) error {
	msg, _, _ := strings.Cut(strings.TrimSpace(err.Error()), "\n")
	return s.report("STATUS=" + msg + "\n")
}

func (s *Sockets) report(line string) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	f := s.ready
	s.ready = nil
	s.mu.Unlock()
	if f == nil {
		return nil
	}
	_, err := f.WriteString(line)
	return errors.Join(err, f.Close())
}
