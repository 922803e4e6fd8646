package runtime_test

import (
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/filtertest"
)

// TestFilter_MaxBuffer: a body the guest reads is held up to MaxBuffer
// bytes; one byte more fails the request with the matching error, the
// guest returns normally and its (only) instance keeps serving.
func TestFilter_MaxBuffer(t *testing.T) {
	const limit = 1000
	tests := []struct {
		name      string
		req, resp int
		want      error
		outcome   string
	}{
		{"both at the limit", limit, limit, nil, "body response ok"},
		{"request one over", limit + 1, 0, runtime.ErrRequestBodyTooLarge, "body request buffer_limit"},
		{"request far over", 64 << 10, 0, runtime.ErrRequestBodyTooLarge, "body request buffer_limit"},
		{"response one over", 10, limit + 1, runtime.ErrResponseBodyTooLarge, "body response buffer_limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := newEnv(t)
			f := ev.filter(t, "body", runtime.FilterOptions{PoolSize: 1, MaxBuffer: limit})
			body := &countingReader{r: strings.NewReader(strings.Repeat("a", tt.req))}
			x := filtertest.NewExchange("GET", "/")
			x.Meth = "POST"
			x.ReqBody = body
			_, err := roundTrip(f, x, func(x *filtertest.Exchange) {
				x.SetBody([]byte(strings.Repeat("b", tt.resp)))
			})
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if body.n > limit+1 {
				t.Errorf("host read %d bytes of the request body, limit %d", body.n, limit)
			}
			if !ev.obs.has(tt.outcome) {
				t.Errorf("observer saw %v, want %q", ev.obs.calls, tt.outcome)
			}
			// Not a trap: the same instance serves the next request.
			s := f.Stats()
			if s.Live != 1 || s.Errors != 0 {
				t.Errorf("stats after: live %d errors %d, want 1 and 0", s.Live, s.Errors)
			}
			x = filtertest.NewExchange("GET", "/")
			x.Meth = "POST"
			x.ReqBody = strings.NewReader("ok")
			if _, err := roundTrip(f, x, nil); err != nil {
				t.Fatalf("next request: %v", err)
			}
			if tt.want != nil && !strings.Contains(ev.log.String(), "max_buffer=1000") {
				t.Errorf("no log line with the limit:\n%s", ev.log.String())
			}
		})
	}
}

// TestFilter_MaxBufferNone: a negative MaxBuffer ("0B" in the config)
// buffers nothing: an empty body still reads, one byte does not.
func TestFilter_MaxBufferNone(t *testing.T) {
	ev := newEnv(t)
	f := ev.filter(t, "body", runtime.FilterOptions{PoolSize: 1, MaxBuffer: -1})
	for _, tt := range []struct {
		body string
		want error
	}{{"", nil}, {"x", runtime.ErrRequestBodyTooLarge}} {
		x := filtertest.NewExchange("GET", "/")
		x.Meth = "POST"
		x.ReqBody = strings.NewReader(tt.body)
		if _, err := roundTrip(f, x, nil); !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("body %q: err = %v, want %v", tt.body, err, tt.want)
		}
	}
}

// TestFilter_BodyTimeout: a client that trickles its body, or stalls, is
// given up on before the filter's deadline: the request fails with
// ErrRequestBodyTimeout in about the timeout, and the instance, which
// never timed out itself, serves the next request.
func TestFilter_BodyTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	tests := []struct {
		name string
		x    func() runtime.HTTP
	}{
		// No read deadline offered: checked between reads.
		{"trickle", func() runtime.HTTP {
			x := filtertest.NewExchange("GET", "/")
			x.Meth = "POST"
			x.ReqBody = &trickle{every: 20 * time.Millisecond, left: 1000}
			return x
		}},
		// A read deadline offered: a stalled read ends at it.
		{"stall with deadline", func() runtime.HTTP {
			x := &deadlineExchange{Exchange: filtertest.NewExchange("GET", "/")}
			x.Meth = "POST"
			return x
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := newEnv(t)
			f := ev.filter(t, "body", runtime.FilterOptions{PoolSize: 1, Timeout: timeout})
			start := time.Now()
			c, err := f.HandleRequest(tt.x())
			took := time.Since(start)
			if c != nil || !errors.Is(err, runtime.ErrRequestBodyTimeout) {
				t.Fatalf("HandleRequest = %v, %v; want ErrRequestBodyTimeout", c, err)
			}
			if took > timeout+100*time.Millisecond {
				t.Errorf("took %s, timeout %s", took, timeout)
			}
			if !ev.obs.has("body request body_timeout") {
				t.Errorf("observer saw %v", ev.obs.calls)
			}
			if s := f.Stats(); s.Live != 1 || s.Errors != 0 {
				t.Errorf("stats after: live %d errors %d, want 1 and 0", s.Live, s.Errors)
			}
			x := filtertest.NewExchange("GET", "/")
			x.Meth = "POST"
			x.ReqBody = strings.NewReader("ok")
			if _, err := roundTrip(f, x, nil); err != nil {
				t.Fatalf("next request: %v", err)
			}
		})
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// trickle yields one byte per interval, left bytes in all.
type trickle struct {
	every time.Duration
	left  int
}

func (t *trickle) Read(p []byte) (int, error) {
	if t.left == 0 {
		return 0, io.EOF
	}
	time.Sleep(t.every)
	t.left--
	p[0] = 'a'
	return 1, nil
}

// deadlineExchange has a request body that never sends a byte: a read
// returns at the read deadline set through SetReadDeadline (or after 5s,
// which fails the test).
type deadlineExchange struct {
	*filtertest.Exchange
	mu       sync.Mutex
	deadline time.Time
}

func (x *deadlineExchange) SetReadDeadline(t time.Time) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.deadline = t
	return nil
}

func (x *deadlineExchange) RequestBody() io.Reader { return stalled{x} }

type stalled struct{ x *deadlineExchange }

func (s stalled) Read(p []byte) (int, error) {
	s.x.mu.Lock()
	d := s.x.deadline
	s.x.mu.Unlock()
	if d.IsZero() {
		d = time.Now().Add(5 * time.Second)
	}
	time.Sleep(time.Until(d))
	return 0, os.ErrDeadlineExceeded
}

// TestFilter_BodyReadError: a request body that fails to read (the client
// reset, the listener's max_request_body) fails the request with that
// error, not as a trap: the instance keeps serving.
func TestFilter_BodyReadError(t *testing.T) {
	ev := newEnv(t)
	f := ev.filter(t, "body", runtime.FilterOptions{PoolSize: 1})
	cause := errors.New("client went away")
	x := filtertest.NewExchange("GET", "/")
	x.Meth = "POST"
	x.ReqBody = io.MultiReader(strings.NewReader("abc"), errReader{cause})
	c, err := f.HandleRequest(x)
	if c != nil || !errors.Is(err, cause) || errors.Is(err, runtime.ErrTrap) {
		t.Fatalf("HandleRequest = %v, %v; want the read error, no trap", c, err)
	}
	x = filtertest.NewExchange("GET", "/")
	x.Meth = "POST"
	x.ReqBody = strings.NewReader("ok")
	if _, err := roundTrip(f, x, nil); err != nil {
		t.Fatalf("next request: %v", err)
	}
	if s := f.Stats(); s.Live != 1 {
		t.Errorf("live %d, want 1: the instance was replaced", s.Live)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
