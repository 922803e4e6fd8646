package runtime_test

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/filtertest"
)

// rssKiB reads VmRSS of this process (Linux); 0 elsewhere.
func rssKiB() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// TestPool_Hammer_TenThousandWaiting: 10,000 requests in flight, all
// waiting on a slow "upstream" between their two phases, use no more
// than PoolSize instances. The requests are in-memory fakes (10,000
// loopback connections would exceed common fd limits); the loopback
// version with 500 connections is in conformance/httpwasm.
func TestPool_Hammer_TenThousandWaiting(t *testing.T) {
	const n, poolSize = 10000, 4
	ev := newEnv(t)
	f := ev.filter(t, "noop", runtime.FilterOptions{PoolSize: poolSize, Timeout: 10 * time.Second})
	before := rssKiB()

	upstream := make(chan struct{})
	var started, finished sync.WaitGroup
	var failures atomic.Int64
	started.Add(n)
	finished.Add(n)
	for range n {
		go func() {
			defer finished.Done()
			x := filtertest.NewExchange("GET", "/")
			c, err := f.HandleRequest(x)
			started.Done()
			if err != nil || c == nil {
				failures.Add(1)
				return
			}
			<-upstream // the slow upstream
			if err := c.HandleResponse(x, false); err != nil {
				failures.Add(1)
			}
		}()
	}
	t0 := time.Now()
	started.Wait()
	t.Logf("all started after %v", time.Since(t0))
	live := f.Stats().Live
	during := rssKiB()
	close(upstream)
	t1 := time.Now()
	finished.Wait()
	t.Logf("all finished after %v", time.Since(t1))

	t.Logf("%d requests waiting: %d live instances (pool %d); RSS %d KiB -> %d KiB (+%d KiB, %.1f KiB/request incl. goroutine stacks)",
		n, live, poolSize, before, during, during-before, float64(during-before)/n)
	if live > poolSize {
		t.Errorf("live instances = %d, want <= %d", live, poolSize)
	}
	if failures.Load() != 0 {
		t.Errorf("%d failed requests", failures.Load())
	}
	if s := f.Stats(); s.Invocations != 2*n || s.Errors != 0 {
		t.Errorf("stats = %+v", s)
	}
}
