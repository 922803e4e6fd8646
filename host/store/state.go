package store

import "time"

// State reports what the calls so far found of the server, for the
// admin status page: "unknown" (no call yet), "up" or "down"; since is
// when it went down (zero otherwise). It reads two atomics and never
// calls the server.
func (s *Store) State() (state string, since time.Time) {
	switch s.state.Load() {
	case stateUp:
		return "up", time.Time{}
	case stateDown:
		return "down", time.Unix(0, s.since.Load())
	}
	return "unknown", time.Time{}
}

// Address is the server's address as configured.
func (s *Store) Address() string { return s.addr }
