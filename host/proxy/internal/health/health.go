// Package health runs the proxy's active health checks: one goroutine per
// upstream that probes it at an interval and reports when it goes down or
// comes back, with rise/fall hysteresis so that one slow answer does not
// flap the node.
package health

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Probe asks an upstream once; it returns the response status.
type Probe func(ctx context.Context) (status int, err error)

// Config is one upstream's check.
type Config struct {
	Interval time.Duration // between probes
	Timeout  time.Duration // per probe
	Expect   int           // status that counts as healthy
	Rise     int           // consecutive successes to come back up
	Fall     int           // consecutive failures to go down
}

// Checker probes upstreams until Close.
type Checker struct {
	cancel context.CancelFunc
	ctx    context.Context
	wg     sync.WaitGroup
}

// NewChecker returns a checker with nothing running yet.
func NewChecker() *Checker {
	ctx, cancel := context.WithCancel(context.Background())
	return &Checker{ctx: ctx, cancel: cancel}
}

// Check is the state of one upstream's running check.
type Check struct {
	mu      sync.Mutex
	ejected bool // a passive ejection waits for Rise passing checks
	ok      int  // passing checks in a row
}

// Ejected tells the check that passive health took its upstream out:
// Rise passing checks in a row from now on end the ejection (Start's
// change is called with up=true), whether or not the active check had
// the upstream down. Ejected on a nil *Check does nothing.
func (c *Check) Ejected() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.ejected, c.ok = true, 0
	c.mu.Unlock()
}

// Readmitted tells the check that a passive ejection ended otherwise
// (its cool-down ran out): no longer wait for Rise passes to end it.
func (c *Check) Readmitted() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.ejected = false
	c.mu.Unlock()
}

// Start probes with p every c.Interval and calls change with the new state
// each time the upstream goes down (up=false, after c.Fall failing checks
// in a row) or comes back (up=true, after c.Rise passing ones); coming
// back is also reported when the upstream was only ejected (see
// Check.Ejected). The upstream starts out up. change runs on the check's
// goroutine, never twice at once for one upstream.
func (k *Checker) Start(c Config, p Probe, change func(up bool, status int, err error)) *Check {
	st := &Check{}
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		t := time.NewTicker(c.Interval)
		defer t.Stop()
		up, bad := true, 0
		for {
			select {
			case <-k.ctx.Done():
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(k.ctx, c.Timeout)
			status, err := p(ctx)
			cancel()
			if k.ctx.Err() != nil {
				return
			}
			if err == nil && status == c.Expect {
				bad = 0
				st.mu.Lock()
				st.ok++
				back := (!up || st.ejected) && st.ok >= c.Rise
				if back {
					st.ejected = false
				}
				st.mu.Unlock()
				if back {
					up = true
					change(true, status, nil)
				}
				continue
			}
			st.mu.Lock()
			st.ok = 0
			st.mu.Unlock()
			bad++
			if up && bad >= c.Fall {
				up = false
				change(false, status, err)
			}
		}
	}()
	return st
}

// Close stops every probe and waits for them to return.
func (k *Checker) Close() {
	k.cancel()
	k.wg.Wait()
}

// Passive counts consecutive failures of one upstream.
type Passive struct{ fails atomic.Int32 }

// Fail records a failure and reports whether it is the maxFails-th in a
// row; the count then stays at maxFails-1, so that a readmitted upstream
// that fails again at once is ejected again at once.
func (p *Passive) Fail(maxFails int) bool {
	if int(p.fails.Add(1)) >= maxFails {
		p.fails.Store(int32(maxFails - 1))
		return true
	}
	return false
}

// Success resets the count. It only reads in the common case, so that
// requests on many cores do not contend for the count's cache line.
func (p *Passive) Success() {
	if p.fails.Load() != 0 {
		p.fails.Store(0)
	}
}
