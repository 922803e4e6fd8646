package health

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestCheckerRiseFall(t *testing.T) {
	var status atomic.Int32
	status.Store(200)
	var mu sync.Mutex
	var changes []bool
	k := NewChecker()
	k.Start(Config{Interval: 5 * time.Millisecond, Timeout: 50 * time.Millisecond, Expect: 200, Rise: 2, Fall: 3},
		func(ctx context.Context) (int, error) {
			if s := status.Load(); s != 0 {
				return int(s), nil
			}
			return 0, errors.New("refused")
		},
		func(up bool, _ int, _ error) {
			mu.Lock()
			changes = append(changes, up)
			mu.Unlock()
		})
	wait := func(n int) {
		t.Helper()
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			mu.Lock()
			l := len(changes)
			mu.Unlock()
			if l >= n {
				return
			}
		}
		t.Fatalf("waited for %d changes", n)
	}
	status.Store(503)
	wait(1)
	status.Store(0)
	time.Sleep(30 * time.Millisecond)
	status.Store(200)
	wait(2)
	k.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(changes) != 2 || changes[0] || !changes[1] {
		t.Errorf("changes %v, want [false true]", changes)
	}
}

func TestCheckerCloseStops(t *testing.T) {
	var probes atomic.Int32
	k := NewChecker()
	for i := 0; i < 3; i++ {
		k.Start(Config{Interval: time.Millisecond, Timeout: time.Second, Expect: 200, Rise: 1, Fall: 1},
			func(ctx context.Context) (int, error) { probes.Add(1); return 200, nil }, func(bool, int, error) {})
	}
	time.Sleep(20 * time.Millisecond)
	k.Close()
	n := probes.Load()
	time.Sleep(20 * time.Millisecond)
	if probes.Load() != n {
		t.Error("probes ran after Close")
	}
}

func TestPassive(t *testing.T) {
	var p Passive
	if p.Fail(3) || p.Fail(3) {
		t.Fatal("ejected early")
	}
	if !p.Fail(3) {
		t.Fatal("not ejected at 3")
	}
	if !p.Fail(3) {
		t.Fatal("a readmitted upstream that fails again is not ejected at once")
	}
	p.Success()
	if p.Fail(3) {
		t.Fatal("success did not reset")
	}
}

// An ejected upstream whose active check keeps passing comes back after
// Rise passes counted from the ejection, not before, and not at all
// while the checks fail.
func TestCheckerRiseEndsEjection(t *testing.T) {
	var status atomic.Int32
	status.Store(200)
	came := make(chan time.Time, 4)
	k := NewChecker()
	defer k.Close()
	var probes atomic.Int32
	c := k.Start(Config{Interval: 5 * time.Millisecond, Timeout: 50 * time.Millisecond, Expect: 200, Rise: 3, Fall: 2},
		func(ctx context.Context) (int, error) { probes.Add(1); return int(status.Load()), nil },
		func(up bool, _ int, _ error) {
			if up {
				came <- time.Now()
			}
		})
	for end := time.Now().Add(time.Second); probes.Load() < 5 && time.Now().Before(end); {
		time.Sleep(2 * time.Millisecond)
	}
	select {
	case <-came:
		t.Fatal("an upstream that never went out came back")
	default:
	}
	status.Store(500) // one failure: below Fall, but it resets the passes
	time.Sleep(12 * time.Millisecond)
	c.Ejected()
	at := probes.Load()
	status.Store(200)
	select {
	case <-came:
		if n := probes.Load() - at; n < 3 {
			t.Errorf("back after %d probes, want at least Rise (3)", n)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("rise passing checks did not end the ejection")
	}
	c.Ejected()
	c.Readmitted() // the cool-down ended first: nothing more to report
	time.Sleep(40 * time.Millisecond)
	select {
	case <-came:
		t.Error("reported a comeback after Readmitted")
	default:
	}
}
