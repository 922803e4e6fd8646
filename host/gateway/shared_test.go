package gateway_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/gateway"
)

// fakeShared is an in-memory store: a fixed number of tokens per key (no
// refill), so totals are exact.
type fakeShared struct {
	mu    sync.Mutex
	left  map[string]int
	calls int
	keys  map[string]bool
	fail  bool
}

func newFake(tokens int, keys ...string) *fakeShared {
	f := &fakeShared{left: map[string]int{}, keys: map[string]bool{}}
	f.left[""] = tokens // every key starts with this many
	return f
}

func (f *fakeShared) Take(_ context.Context, key string, _ float64, _, want int) (int, time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fail {
		return 0, 0, errors.New("store down")
	}
	if !f.keys[key] {
		f.keys[key] = true
		f.left[key] = f.left[""]
	}
	got := min(want, f.left[key])
	f.left[key] -= got
	if got == 0 {
		return 0, 250 * time.Millisecond, nil
	}
	return got, 0, nil
}

func TestSharedAllowance(t *testing.T) {
	tests := []struct {
		name                string
		tokens, allowance   int
		requests, wantAdmit int
		wantCalls           int
	}{
		{"one call per request", 10, 1, 15, 10, 15},
		{"an allowance of 4 spends locally", 10, 4, 15, 10, 3 + 5}, // 4+4+2 tokens, then a call per refused request
		{"allowance above the tokens", 3, 8, 5, 3, 1 + 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(tt.tokens)
			l, err := gateway.NewLimiter(gateway.RateLimit{Rate: 1000, Burst: 1000, Shared: f, Name: "s/r", Allowance: tt.allowance})
			if err != nil {
				t.Fatal(err)
			}
			admitted := 0
			ctx := fastCtx("203.0.113.9")
			h := exchange.Fast(exchange.HandlerFunc(func(x exchange.Exchange) error {
				if v, _ := l.Decide(x); v == gateway.Admit {
					admitted++
				}
				return nil
			}), exchangetest.RenderError, false)
			for range tt.requests {
				h(ctx)
			}
			if admitted != tt.wantAdmit {
				t.Errorf("admitted %d, want %d: never more than the store granted", admitted, tt.wantAdmit)
			}
			if f.calls != tt.wantCalls {
				t.Errorf("store calls %d, want %d", f.calls, tt.wantCalls)
			}
		})
	}
}

// Two limiters with the same name are two instances: they share one
// bucket per client, whatever their process-local hash seeds.
func TestSharedAcrossInstances(t *testing.T) {
	f := newFake(10)
	var ls []*gateway.Limiter
	for range 2 {
		l, _ := gateway.NewLimiter(gateway.RateLimit{Rate: 1, Burst: 10, Shared: f, Name: "site/route", Allowance: 1})
		ls = append(ls, l)
	}
	admitted := 0
	for i := range 20 {
		h := exchange.Fast(exchange.HandlerFunc(func(x exchange.Exchange) error {
			if ok, _ := ls[i%2].Allow(x); ok {
				admitted++
			}
			return nil
		}), exchangetest.RenderError, false)
		h(fastCtx("198.51.100.7"))
	}
	if admitted != 10 || len(f.keys) != 1 {
		t.Fatalf("admitted %d over %d shared keys, want 10 over 1", admitted, len(f.keys))
	}
}

func TestSharedStoreError(t *testing.T) {
	for _, deny := range []bool{false, true} {
		// One limiter per engine, behind one handler that picks it.
		limiters := map[string]*gateway.Limiter{}
		fakes := map[string]*fakeShared{}
		var mu sync.Mutex
		h := exchange.HandlerFunc(func(x exchange.Exchange) error {
			mu.Lock()
			l := limiters[string(x.RequestHeader("X-Engine"))]
			mu.Unlock()
			return gateway.Wrap(ok, l, nil).ServeExchange(x)
		})
		for _, e := range exchangetest.Engines(t, h) {
			f := newFake(100)
			f.fail = true
			l, _ := gateway.NewLimiter(gateway.RateLimit{Rate: 1, Burst: 1, Shared: f, Name: "x", OnStoreError: map[bool]string{true: "deny"}[deny]})
			mu.Lock()
			limiters[e.Name], fakes[e.Name] = l, f
			mu.Unlock()
			want := http.StatusOK
			if deny {
				want = http.StatusServiceUnavailable
			}
			for i := range 3 {
				req, _ := http.NewRequest("GET", e.URL+"/", nil)
				req.Header.Set("X-Engine", e.Name)
				resp, err := e.Client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Fatalf("%s deny=%v request %d: %d, want %d", e.Name, deny, i, resp.StatusCode, want)
				}
				if deny && resp.Header.Get("Retry-After") != "1" {
					t.Errorf("%s deny: Retry-After %q, want 1", e.Name, resp.Header.Get("Retry-After"))
				}
			}
			// After a failure the store is left alone for a moment, so
			// a down store does not cost every request a dial.
			if f.calls != 1 {
				t.Errorf("%s deny=%v: %d store calls for 3 requests within the backoff, want 1", e.Name, deny, f.calls)
			}
		}
		// And asked again afterwards: recovery needs no restart.
		l, f := limiters["std"], fakes["std"]
		f.mu.Lock()
		f.fail = false
		f.mu.Unlock()
		time.Sleep(150 * time.Millisecond)
		h2 := exchange.Fast(exchange.HandlerFunc(func(x exchange.Exchange) error {
			if v, _ := l.Decide(x); v != gateway.Admit {
				t.Errorf("deny=%v: after recovery %v, want Admit", deny, v)
			}
			return nil
		}), exchangetest.RenderError, false)
		h2(fastCtx("192.0.2.1"))
		if f.calls != 2 {
			t.Errorf("deny=%v: store not asked after the backoff (%d calls)", deny, f.calls)
		}
	}
}

// BenchmarkLimiter_Local and BenchmarkLimiter_SharedAllowance compare a
// local bucket with a shared one whose allowance is spent locally (the
// store call itself is measured against a real Redis in
// conformance/store).
func BenchmarkLimiter_Local(b *testing.B) {
	l, _ := gateway.NewLimiter(gateway.RateLimit{Rate: 1e9, Burst: 1 << 30})
	benchLimiter(b, l)
}

func BenchmarkLimiter_SharedAllowance(b *testing.B) {
	l, _ := gateway.NewLimiter(gateway.RateLimit{Rate: 1e9, Burst: 1 << 30, Shared: newFake(1 << 62), Name: "bench", Allowance: 100})
	benchLimiter(b, l)
}

func benchLimiter(b *testing.B, l *gateway.Limiter) {
	ctx := fastCtx("203.0.113.9")
	h := exchange.Fast(exchange.HandlerFunc(func(x exchange.Exchange) error {
		l.Allow(x)
		return nil
	}), exchangetest.RenderError, false)
	b.ReportAllocs()
	for b.Loop() {
		h(ctx)
	}
}

// TestSharedHammer: many goroutines on one key never admit more than the
// store granted, and lose at most one allowance (what is left unspent).
func TestSharedHammer(t *testing.T) {
	const tokens, allowance = 2000, 8
	f := newFake(tokens)
	l, _ := gateway.NewLimiter(gateway.RateLimit{Rate: 1e6, Burst: 1 << 20, Shared: f, Name: "h", Allowance: allowance})
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := fastCtx("203.0.113.50")
			h := exchange.Fast(exchange.HandlerFunc(func(x exchange.Exchange) error {
				if v, _ := l.Decide(x); v == gateway.Admit {
					admitted.Add(1)
				}
				return nil
			}), exchangetest.RenderError, false)
			for range 250 {
				h(ctx)
			}
		}()
	}
	wg.Wait()
	if n := admitted.Load(); n > tokens || n < tokens-(allowance-1) {
		t.Fatalf("admitted %d of %d tokens granted, want within one allowance below", n, tokens)
	}
}
