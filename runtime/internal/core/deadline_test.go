package core

import (
	"sync/atomic"
	"testing"
	"time"
)

// fired records when a deadline's fire function ran.
type fired struct {
	n  atomic.Int64
	at atomic.Int64 // mono of the last run
}

func newDeadline(t *testing.T) (*deadline, *fired) {
	t.Helper()
	d, f := &deadline{}, &fired{}
	d.init(func() { f.at.Store(mono()); f.n.Add(1) })
	t.Cleanup(d.stop)
	return d, f
}

// waitFired waits at most 5 s for n runs of fire.
func waitFired(t *testing.T, f *fired, n int64) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); f.n.Load() < n; {
		if time.Now().After(end) {
			t.Fatalf("fire ran %d times, want %d", f.n.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestDeadline: a call past its deadline is claimed when its own
// deadline passes, not that of an earlier call the timer was armed for,
// and not that of a longer earlier timeout (InitTimeout, say); calls that
// end in time are never claimed, however long the timer stays armed.
func TestDeadline(t *testing.T) {
	const timeout = 100 * time.Millisecond
	tests := []struct {
		name  string
		setup func(d *deadline) // calls that end in time, before the one that doesn't
	}{
		{"first call", func(d *deadline) {}},
		{"after a longer timeout", func(d *deadline) {
			d.end(d.begin(mono(), 10*time.Second))
		}},
		{"timer armed for an earlier call", func(d *deadline) {
			d.end(d.begin(mono(), timeout))
			time.Sleep(timeout / 2)
		}},
		{"timer fired idle", func(d *deadline) {
			d.end(d.begin(mono(), timeout))
			time.Sleep(2 * timeout)
		}},
		{"many calls over several timeouts", func(d *deadline) {
			for end := time.Now().Add(3 * timeout); time.Now().Before(end); {
				if !d.end(d.begin(mono(), timeout)) {
					panic("a call that ended in time was claimed")
				}
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, f := newDeadline(t)
			tc.setup(d)
			if n := f.n.Load(); n != 0 {
				t.Fatalf("fire ran %d times for calls that ended in time", n)
			}
			start := mono()
			at := d.begin(start, timeout)
			waitFired(t, f, 1)
			if got := time.Duration(f.at.Load() - start); got < timeout || got > timeout+2*time.Second {
				t.Errorf("fired %v after the call began, want %v", got, timeout)
			}
			if d.end(at) {
				t.Error("end after the timer claimed the call reported it in time")
			}
			time.Sleep(2 * timeout)
			if n := f.n.Load(); n != 1 {
				t.Errorf("fire ran %d times, want 1", n)
			}
		})
	}
}

// TestDeadline_Hammer: calls of random lengths around a 1 ms timeout; a
// call is claimed exactly when fire ran for it, and never before its
// deadline.
func TestDeadline_Hammer(t *testing.T) {
	const timeout = time.Millisecond
	d, f := newDeadline(t)
	claimed := int64(0)
	for i := range 2000 {
		start := mono()
		at := d.begin(start, timeout)
		if i%50 == 0 {
			time.Sleep(2 * timeout)
		} else if i%7 == 0 {
			time.Sleep(timeout / 4)
		}
		if !d.end(at) {
			claimed++
			waitFired(t, f, claimed)
			if got := time.Duration(f.at.Load() - start); got < timeout {
				t.Fatalf("call %d claimed %v after it began, before its deadline", i, got)
			}
			d.at.Store(0) // a claimed instance is retired; this one serves on
		}
	}
	time.Sleep(5 * timeout)
	if n := f.n.Load(); n != claimed {
		t.Errorf("fire ran %d times, %d calls were claimed", n, claimed)
	}
	if claimed == 0 {
		t.Error("no call was claimed: the test did not test")
	}
}
