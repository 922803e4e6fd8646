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

// Start probes with p every c.Interval and calls change with the new state
// each time the upstream goes down (up=false) or comes back (up=true). The
// upstream starts out up.
func (k *Checker) Start(c Config, p Probe, change func(up bool, status int, err error)) {
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		t := time.NewTicker(c.Interval)
		defer t.Stop()
		up, ok, bad := true, 0, 0
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
				ok, bad = ok+1, 0
				if !up && ok >= c.Rise {
					up = true
					change(true, status, nil)
				}
				continue
			}
			ok, bad = 0, bad+1
			if up && bad >= c.Fall {
				up = false
				change(false, status, err)
			}
		}
	}()
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
