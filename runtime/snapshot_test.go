package runtime_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/filtertest"
)

// snapConfig is the config of the snap guest in these tests; the guest
// reports its first byte.
var snapConfig = []byte(`{"a":1}`)

// state runs one request through the snap guest and returns its x-state:
// seed, count in a global, count in memory, 'z' for a zeroed data
// segment, first byte of the config.
func state(t *testing.T, f *runtime.Filter, uri string) string {
	t.Helper()
	x := filtertest.NewExchange("GET", uri)
	if _, err := roundTrip(f, x, nil); err != nil {
		t.Fatalf("%s: %v", uri, err)
	}
	return string(x.ResponseHeader("x-state"))
}

type counts struct{ startUps, restores, resets uint64 }

func countsOf(f *runtime.Filter) counts {
	s := f.Stats()
	return counts{s.StartUps, s.Restores, s.Resets}
}

// otherBytes is wasm with a custom section appended: another
// module (another digest) that behaves the same.
func otherBytes(wasm []byte) []byte {
	return append(append([]byte{}, wasm...), 0, 3, 1, 'x', 0)
}

func TestSnapshot_PoolGrowth(t *testing.T) {
	// Instances from the snapshot start from the module without its data
	// segments, or (WithoutBare, and for a module whose code reads them)
	// with them: then the segment the start-up zeroed must be zeroed. They
	// map the snapshot's memory, or (WithoutImage, and off Linux) copy it.
	for _, bare := range []bool{true, false} {
		for _, image := range []bool{true, false} {
			t.Run(fmt.Sprintf("bare=%v,image=%v", bare, image), func(t *testing.T) {
				var opts []func(*runtime.EngineOptions)
				if !bare {
					opts = append(opts, runtime.WithoutBare)
				}
				if !image {
					opts = append(opts, runtime.WithoutImage)
				}
				testPoolGrowth(t, newEnv(t, opts...), bare)
			})
		}
	}
}

func testPoolGrowth(t *testing.T, ev *env, bare bool) {
	f := ev.filter(t, "snap", runtime.FilterOptions{PoolSize: 4, Config: snapConfig})
	if got, want := countsOf(f), (counts{startUps: 1, restores: 3}); got != want {
		t.Fatalf("after NewFilter: %+v, want %+v", got, want)
	}
	if runtime.FromBare(f) != bare {
		t.Fatalf("from the bare module: %v, want %v", runtime.FromBare(f), bare)
	}
	// The pool hands instances out in turn: each of the four answers once
	// with the state its start-up left (the global it does not export is
	// 7, the data segment it zeroed is zero, the config is in memory),
	// then once more with its counts at two.
	for i := range 8 {
		want := "711z{"
		if i >= 4 {
			want = "722z{"
		}
		if got := state(t, f, "/"); got != want {
			t.Errorf("request %d: x-state %q, want %q", i, got, want)
		}
	}
}

func TestSnapshot_Trap(t *testing.T) {
	ev := newEnv(t)
	f := ev.filter(t, "snap", runtime.FilterOptions{PoolSize: 1, Config: snapConfig})
	if got := state(t, f, "/"); got != "711z{" {
		t.Fatalf("x-state %q", got)
	}
	if _, err := roundTrip(f, filtertest.NewExchange("GET", "/trap"), nil); !errors.Is(err, runtime.ErrTrap) {
		t.Fatalf("/trap: %v", err)
	}
	waitFor(t, func() bool { return f.Stats().Restores == 1 })
	if got, want := countsOf(f), (counts{startUps: 1, restores: 1}); got != want {
		t.Fatalf("after a trap: %+v, want %+v", got, want)
	}
	if got := state(t, f, "/"); got != "711z{" {
		t.Errorf("the replacement's x-state %q, want the snapshot's 711z{", got)
	}
}

func TestSnapshot_Swap(t *testing.T) {
	ev := newEnv(t)
	ctx := context.Background()
	f := ev.filter(t, "snap", runtime.FilterOptions{PoolSize: 3, Config: snapConfig})
	state(t, f, "/")
	m, err := ev.e.Compile(ctx, otherBytes(guest(t, "snap")))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	if err := f.Swap(ctx, m); err != nil {
		t.Fatal(err)
	}
	// One start-up for the new module, the rest of its pool restored.
	if got, want := countsOf(f), (counts{startUps: 2, restores: 4}); got != want {
		t.Fatalf("after a swap: %+v, want %+v", got, want)
	}
	for range 3 {
		if got := state(t, f, "/"); got != "711z{" {
			t.Errorf("after the swap: x-state %q", got)
		}
	}
	// A reload makes a new filter of the same module and config: it runs
	// no start-up at all. Another config runs its own.
	g, err := ev.e.NewFilter(ctx, "reloaded", m, runtime.FilterOptions{PoolSize: 2, Config: snapConfig})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(ctx)
	if got, want := countsOf(g), (counts{restores: 2}); got != want {
		t.Errorf("same module and config: %+v, want %+v", got, want)
	}
	h, err := ev.e.NewFilter(ctx, "other", m, runtime.FilterOptions{PoolSize: 2, Config: []byte("[]")})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	if got, want := countsOf(h), (counts{startUps: 1, restores: 1}); got != want {
		t.Errorf("another config: %+v, want %+v", got, want)
	}
	if got := state(t, h, "/"); got != "711z[" {
		t.Errorf("another config: x-state %q", got)
	}
}

func TestSnapshot_Reset(t *testing.T) {
	ev := newEnv(t)
	keep := ev.filter(t, "snap", runtime.FilterOptions{PoolSize: 1, Config: snapConfig})
	reset := ev.filter(t, "snap", runtime.FilterOptions{PoolSize: 1, Config: snapConfig, Reset: runtime.ResetRequest, Timeout: 200 * time.Millisecond})
	for i := 1; i <= 3; i++ {
		if got, want := state(t, keep, "/"), fmt.Sprintf("7%d%dz{", i, i); got != want {
			t.Errorf("reset never, request %d: x-state %q, want %q (state persists)", i, got, want)
		}
		if got := state(t, reset, "/"); got != "711z{" {
			t.Errorf("reset request, request %d: x-state %q, want 711z{ (nothing leaks)", i, got)
		}
	}
	if got, want := countsOf(reset), (counts{startUps: 0, restores: 1, resets: 3}); got != want {
		// The second filter shares the first one's snapshot.
		t.Errorf("reset request: %+v, want %+v", got, want)
	}

	// The instance is held from handle_request to the end of the request.
	x := filtertest.NewExchange("GET", "/")
	c, err := reset.HandleRequest(x)
	if err != nil || c == nil {
		t.Fatal(c, err)
	}
	if _, err := reset.HandleRequest(filtertest.NewExchange("GET", "/")); !errors.Is(err, runtime.ErrOverload) {
		t.Errorf("a second request while the only instance is held: %v, want ErrOverload", err)
	}
	if err := c.HandleResponse(x, false); err != nil {
		t.Fatal(err)
	}
	if got := state(t, reset, "/"); got != "711z{" {
		t.Errorf("after a held request: x-state %q", got)
	}

	// Memory that grew can't shrink: the instance is replaced from the
	// snapshot instead.
	if got := state(t, reset, "/grow"); got != "711z{" {
		t.Errorf("/grow: x-state %q", got)
	}
	waitFor(t, func() bool { return reset.Stats().Restores == 2 })
	if got := state(t, reset, "/"); got != "711z{" {
		t.Errorf("after /grow: x-state %q", got)
	}
}

// TestSnapshot_TablesFallBack: a module that can change its tables is not
// snapshotted; each instance runs its start-up, and reset per request is
// refused.
func TestSnapshot_TablesFallBack(t *testing.T) {
	ev := newEnv(t)
	f := ev.filter(t, "tables", runtime.FilterOptions{PoolSize: 2})
	if got, want := countsOf(f), (counts{startUps: 2}); got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
	x := filtertest.NewExchange("GET", "/")
	if _, err := roundTrip(f, x, nil); err != nil || string(x.ResponseHeader("x-started")) != "1" {
		t.Errorf("x-started %q, %v", x.ResponseHeader("x-started"), err)
	}
	if !strings.Contains(ev.log.String(), "no snapshot") {
		t.Error("the fallback is not logged")
	}
	ctx := context.Background()
	m, err := ev.e.Compile(ctx, guest(t, "tables"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	_, err = ev.e.NewFilter(ctx, "tables", m, runtime.FilterOptions{PoolSize: 1, Reset: runtime.ResetRequest})
	if err == nil || !strings.Contains(err.Error(), "table") {
		t.Errorf("reset request on a module without snapshot: %v", err)
	}
}

// jwtGuest is the shipped jwt filter, a standard Go wasip1 guest, and a
// config for it.
func jwtGuest(t testing.TB) (wasm, config []byte) {
	t.Helper()
	b, err := os.ReadFile("../filters/jwt/jwt.wasm")
	if err != nil {
		t.Fatal(err)
	}
	return b, []byte(`{"keys":[{"secret":"s3cret"}],"claims_to_headers":{"sub":"X-User"}}`)
}

// hs256 is a token for sub signed with secret.
func hs256(secret, sub string) string {
	enc := base64.RawURLEncoding
	msg := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." +
		enc.EncodeToString(fmt.Appendf(nil, `{"sub":%q,"exp":%d}`, sub, time.Now().Add(time.Hour).Unix()))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(msg))
	return msg + "." + enc.EncodeToString(mac.Sum(nil))
}

// TestSnapshot_GoGuest: instances of a Go guest (its runtime, heap and
// parsed config) made from the snapshot serve, with and without reset.
func TestSnapshot_GoGuest(t *testing.T) {
	wasm, cfg := jwtGuest(t)
	ev := newEnv(t)
	for _, r := range []runtime.Reset{runtime.ResetNever, runtime.ResetRequest} {
		t.Run(r.String(), func(t *testing.T) {
			f := ev.filterBytes(t, "jwt", wasm, runtime.FilterOptions{PoolSize: 2, Config: cfg, Reset: r, MemoryLimit: 64 << 20})
			if s := f.Stats(); s.StartUps != 1 || s.Restores < 1 {
				t.Fatalf("start-ups %d, restores %d", s.StartUps, s.Restores)
			}
			for i := range 6 {
				user := fmt.Sprintf("user%d", i)
				x := filtertest.NewExchange("GET", "/", "Authorization", "Bearer "+hs256("s3cret", user))
				if _, err := roundTrip(f, x, nil); err != nil {
					t.Fatal(err)
				}
				if got := string(x.RequestHeader("X-User")); got != user {
					t.Errorf("request %d: X-User %q, want %q", i, got, user)
				}
				x = filtertest.NewExchange("GET", "/", "Authorization", "Bearer "+hs256("wrong", user))
				if answered, err := roundTrip(f, x, nil); err != nil || !answered || x.Status() != 401 {
					t.Errorf("request %d with a bad signature: answered %v, status %d, %v", i, answered, x.Status(), err)
				}
			}
		})
	}
}

// TestSnapshot_ResetConcurrent: under concurrent requests (both phases,
// the next handler in between) every request of a reset-per-request
// filter sees the snapshot, and the pool is whole afterwards.
func TestSnapshot_ResetConcurrent(t *testing.T) {
	ev := newEnv(t)
	f := ev.filter(t, "snap", runtime.FilterOptions{PoolSize: 2, Config: snapConfig, Reset: runtime.ResetRequest})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				x := filtertest.NewExchange("GET", "/")
				if _, err := roundTrip(f, x, func(*filtertest.Exchange) { time.Sleep(100 * time.Microsecond) }); err != nil {
					t.Error(err)
					return
				}
				if got := string(x.ResponseHeader("x-state")); got != "711z{" {
					t.Errorf("x-state %q", got)
					return
				}
			}
		}()
	}
	wg.Wait()
	if s := f.Stats(); s.Resets != 400 || s.Live != 2 {
		t.Errorf("resets %d, live %d; want 400, 2", s.Resets, s.Live)
	}
}

// TestSnapshot_WASIFiles: a start-up that leaves a file open is not
// snapshotted (a copy of its memory would name a descriptor the new
// instance does not have); one that leaves the file table as it found it
// is.
func TestSnapshot_WASIFiles(t *testing.T) {
	fsys := fstest.MapFS{"f": {Data: []byte("x")}}
	for _, tt := range []struct {
		config, errno string
		want          counts
	}{
		{"open", "0", counts{startUps: 2}},
		{"no", "n", counts{startUps: 1, restores: 1}},
	} {
		t.Run(tt.config, func(t *testing.T) {
			ev := newEnv(t)
			f := ev.filter(t, "wasifile", runtime.FilterOptions{PoolSize: 2, Config: []byte(tt.config), WASI: runtime.WASIOptions{FS: fsys}})
			if got := countsOf(f); got != tt.want {
				t.Errorf("%+v, want %+v", got, tt.want)
			}
			for range 2 {
				x := filtertest.NewExchange("GET", "/")
				if _, err := roundTrip(f, x, nil); err != nil || string(x.ResponseHeader("x-errno")) != tt.errno {
					t.Errorf("x-errno %q, %v; want %q", x.ResponseHeader("x-errno"), err, tt.errno)
				}
			}
			if tt.want.restores == 0 && !strings.Contains(ev.log.String(), "open WASI files") {
				t.Errorf("no reason logged:\n%s", ev.log)
			}
		})
	}
}
