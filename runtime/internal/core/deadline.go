package core

import (
	"sync/atomic"
	"time"
)

// monoEpoch is the origin of mono.
var monoEpoch = time.Now()

// Mono is the monotonic clock in nanoseconds since monoEpoch: one clock
// read, where time.Now reads two (wall and monotonic). Go's timers run on
// the same clock.
func Mono() int64 { return int64(time.Since(monoEpoch)) }

// MonoTime is the time.Time of a Mono reading (with its monotonic part).
func MonoTime(t int64) time.Time { return monoEpoch.Add(time.Duration(t)) }

func mono() int64 { return Mono() }

// deadline enforces the deadline of each guest call on one instance
// with one timer that stays armed while calls keep coming, instead of
// arming a timer before each call and stopping it after (see
// runtime/RATIONALE.md, "Why is the timer not reset for every call?"). A call
// publishes its deadline; the timer, when it fires, either finds the
// instance idle (and stays unarmed until the next call), or finds a call
// whose deadline is later (and is armed again for it), or finds a call
// past its deadline and claims it, exactly once, for expire.
//
// The invariant: while a call is in flight, the timer is pending at or
// before its deadline (when), or it is running tick, which looks at the
// call's deadline after it marked itself not pending.
type deadline struct {
	at    atomic.Int64 // the deadline of the call in flight (mono); 0 when none; claimed when the timer took it
	when  atomic.Int64 // when the pending timer fires (mono); 0 when it is not pending
	timer *time.Timer
}

// claimed is deadline.at once the timer took the call.
const claimed = -1

// init makes the timer; fire runs when a call's deadline passes.
func (d *deadline) init(fire func()) {
	d.timer = time.AfterFunc(time.Hour, func() { d.tick(fire) })
	d.timer.Stop()
}

// begin publishes the deadline of a call starting at now (mono) and
// makes sure the timer fires by then.
func (d *deadline) begin(now int64, timeout time.Duration) int64 {
	at := now + int64(timeout)
	d.at.Store(at)
	if w := d.when.Load(); (w == 0 || w > at) && d.when.CompareAndSwap(w, at) {
		d.timer.Reset(time.Duration(at - now))
	}
	return at
}

// end withdraws the deadline at of the call that began with it. It
// reports false when the timer claimed the call first.
func (d *deadline) end(at int64) bool { return d.at.CompareAndSwap(at, 0) }

// tick runs when the timer fires.
func (d *deadline) tick(fire func()) {
	d.when.Store(0)
	for {
		at := d.at.Load()
		if at == 0 || at == claimed { // idle, or closed: the next begin arms it
			return
		}
		now := mono()
		if now < at {
			if d.when.CompareAndSwap(0, at) {
				d.timer.Reset(time.Duration(at - now))
			}
			return
		}
		if d.at.CompareAndSwap(at, claimed) {
			fire()
			return
		}
		// the call ended, or another began: look again
	}
}

// stop stops the timer; the instance makes no more calls.
func (d *deadline) stop() { d.timer.Stop() }
