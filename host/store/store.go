package store

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/internal/pemfile"
)

// Options is one `store "redis" {}` block.
type Options struct {
	// Address is the server's host:port.
	Address string
	// Username and Password authenticate; both "" means no AUTH.
	Username, Password string
	// TLS, when set, dials the server over TLS.
	TLS *TLSOptions
	// Prefix starts every key; "" means none.
	Prefix string
	// Timeout bounds every call, connecting included; 0 means 250ms.
	Timeout time.Duration
}

// TLSOptions is the store's `tls {}` block: the client TLS block the
// proxy shares (config.UpstreamTLS, one schema for both).
type TLSOptions = config.UpstreamTLS

// Store is a connection pool to one Redis server, with sluice's keys
// under one prefix. It is safe for concurrent use.
type Store struct {
	c       *redis.Client
	addr    string
	prefix  string
	timeout time.Duration

	state   atomic.Int32 // stateUnknown until a call's outcome
	since   atomic.Int64 // when it went down, unix nanoseconds
	checked atomic.Int64 // Check's last ping, unix nanoseconds
}

// A server's state, as the calls found it.
const (
	stateUnknown int32 = iota
	stateUp
	stateDown
)

// logger receives a line when a store first connects, when it loses
// the server and when it finds it again: once each, not per call.
var logger atomic.Pointer[slog.Logger]

// SetLog sets where every store logs (host: sluice's logger); nil means
// slog.Default().
func SetLog(l *slog.Logger) { logger.Store(l) }

func log() *slog.Logger {
	if l := logger.Load(); l != nil {
		return l
	}
	return slog.Default()
}

// quiet is go-redis's logger: its lines (one per failed dial, in its own
// format) never reach the log; the store says what matters once, through
// sluice's logger.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quiet{}) }

// observe notes a call's outcome: a call the server answered (an error
// reply included) finds it up, any other failure down. A change of state
// is logged once.
func (s *Store) observe(err error) {
	var reply redis.Error
	if err == nil || errors.As(err, &reply) {
		switch s.state.Swap(stateUp) {
		case stateUnknown:
			log().Info("store: connected", "address", s.addr)
		case stateDown:
			log().Info("store: answering again; rate limits count in it again", "address", s.addr,
				"down", time.Duration(time.Now().UnixNano()-s.since.Load()).Round(time.Millisecond))
		}
		return
	}
	now := time.Now().UnixNano()
	switch s.state.Swap(stateDown) {
	case stateUnknown:
		s.since.Store(now)
		log().Warn("store: cannot connect; rate limits follow on_store_error until it answers", "address", s.addr, "error", err)
	case stateUp:
		s.since.Store(now)
		log().Warn("store: lost; rate limits follow on_store_error until it answers", "address", s.addr, "error", err)
	}
}

// Check reports whether the server answers, for a readiness probe: it
// pings at most once a second and reports the last outcome between.
func (s *Store) Check(ctx context.Context) bool {
	now := time.Now().UnixNano()
	if now-s.checked.Load() < int64(time.Second) {
		return s.state.Load() == stateUp
	}
	s.checked.Store(now)
	return s.Ping(ctx) == nil
}

// ErrNotFound is what Get returns for a key the store does not hold.
var ErrNotFound = errors.New("store: not found")

var open struct {
	mu sync.Mutex
	by map[string]*Store
}

// Open returns the Store for o: the same one for the same options, for
// the life of the process (reloads keep the pool, and ACME managers that
// outlive a configuration keep a working store). It does not connect:
// the first call does, under the timeout.
func Open(o Options) (*Store, error) {
	if o.Timeout <= 0 {
		o.Timeout = 250 * time.Millisecond
	}
	id := fmt.Sprintf("%q", []any{o.Address, o.Username, o.Password, o.TLS, o.Prefix, o.Timeout})
	open.mu.Lock()
	defer open.mu.Unlock()
	if s := open.by[id]; s != nil {
		return s, nil
	}
	ro := &redis.Options{
		Addr:     o.Address,
		Username: o.Username,
		Password: o.Password,
		// Every call has the store's deadline, and a request waiting on
		// a rate limit is not retried behind the user's back.
		DialTimeout:     o.Timeout,
		ReadTimeout:     o.Timeout,
		WriteTimeout:    o.Timeout,
		PoolTimeout:     o.Timeout,
		MaxRetries:      -1,
		DisableIdentity: true,
		Protocol:        2,
	}
	if o.TLS != nil {
		tc, err := clientTLS(o.TLS, o.Address)
		if err != nil {
			return nil, fmt.Errorf("store %q: %w", o.Address, err)
		}
		ro.TLSConfig = tc
	}
	// Every reply is bounded before go-redis reads it (reply.go); the
	// scanner sits above TLS, on the bytes the server wrote.
	dial := redis.NewDialer(ro)
	ro.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return bound(c, defaultLimits), nil
	}
	s := &Store{c: redis.NewClient(ro), addr: o.Address, prefix: o.Prefix, timeout: o.Timeout}
	if open.by == nil {
		open.by = map[string]*Store{}
	}
	open.by[id] = s
	return s, nil
}

func clientTLS(t *TLSOptions, addr string) (*tls.Config, error) {
	c, err := pemfile.Client(t.CA, t.Cert, t.Key)
	if err != nil {
		return nil, err
	}
	c.ServerName, c.InsecureSkipVerify = t.ServerName, t.InsecureSkipVerify
	if c.ServerName == "" {
		if h, _, err := net.SplitHostPort(addr); err == nil {
			c.ServerName = h
		}
	}
	return c, nil
}

// Timeout is the deadline of every call.
func (s *Store) Timeout() time.Duration { return s.timeout }

// Ping asks the server for an answer, under the timeout.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	err := s.c.Ping(ctx).Err()
	s.observe(err)
	return count(OpPing, err)
}

// Operations, the values of Errors' argument and of the metric's
// operation label.
const (
	OpRateLimit = "rate_limit"
	OpACME      = "acme"
	OpPing      = "ping"
)

// Ops lists the operations, in a fixed order.
var Ops = []string{OpRateLimit, OpACME, OpPing}

var errorCounts [3]atomic.Uint64

// Errors returns how many calls of op have failed since the process
// started, for the sluice_store_errors_total metric.
func Errors(op string) uint64 {
	for i, o := range Ops {
		if o == op {
			return errorCounts[i].Load()
		}
	}
	return 0
}

func count(op string, err error) error {
	if err == nil || errors.Is(err, redis.Nil) {
		return err
	}
	for i, o := range Ops {
		if o == op {
			errorCounts[i].Add(1)
		}
	}
	return err
}

// gcra takes up to ARGV[3] tokens from the bucket KEYS[1] with the
// generic cell rate algorithm: the key holds the theoretical arrival
// time (TAT, in microseconds on the server's clock, so that instances
// whose clocks differ agree). ARGV[1] is the emission interval (µs per
// token), ARGV[2] the burst tolerance (burst × interval). It returns the
// tokens granted and, when none was, the µs until one will be.
var gcra = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]))
if tat == nil or tat < now then tat = now end
local got = math.floor((now + limit - tat) / interval)
if got > want then got = want end
if got < 1 then
  return {0, math.ceil(tat + interval - limit - now)}
end
tat = tat + got * interval
redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', math.ceil((tat - now) / 1000) + 1)
return {got, 0}
`)

// Take takes up to want tokens (at least 1) from the shared bucket key,
// refilled at rate per second up to burst. It returns how many it got
// and, when none, how long until one will be.
func (s *Store) Take(ctx context.Context, key string, rate float64, burst, want int) (got int, wait time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	interval := 1e6 / rate
	res, err := gcra.Run(ctx, s.c, []string{s.prefix + "rl:" + key},
		strconv.FormatFloat(interval, 'f', 3, 64),
		strconv.FormatFloat(interval*float64(max(burst, 1)), 'f', 3, 64),
		max(want, 1)).Int64Slice()
	s.observe(err)
	if err = count(OpRateLimit, err); err != nil {
		return 0, 0, fmt.Errorf("store: rate limit: %w", err)
	}
	if len(res) != 2 {
		return 0, 0, count(OpRateLimit, fmt.Errorf("store: rate limit: script answered %v", res))
	}
	return int(res[0]), time.Duration(res[1]) * time.Microsecond, nil
}

// acmeAttempts is how many times a blob or lock call is tried, each
// under the timeout: they are off the request path, and a certificate
// lost on its way to the store costs a second order at the CA.
const acmeAttempts = 3

// retry runs f up to acmeAttempts times, each with the store's deadline,
// counting every failure.
func (s *Store) retry(ctx context.Context, f func(ctx context.Context, attempt int) error) error {
	var err error
	for i := range acmeAttempts {
		if i > 0 {
			select {
			case <-ctx.Done():
				return err
			case <-time.After(time.Duration(i) * 100 * time.Millisecond):
			}
		}
		c, cancel := context.WithTimeout(ctx, s.timeout)
		err = f(c, i)
		cancel()
		s.observe(err)
		if err == nil || errors.Is(err, redis.Nil) {
			return err
		}
		count(OpACME, err)
	}
	return err
}

// Get returns the blob stored under name, or ErrNotFound.
func (s *Store) Get(ctx context.Context, name string) ([]byte, error) {
	var b []byte
	err := s.retry(ctx, func(ctx context.Context, _ int) (err error) {
		b, err = s.c.Get(ctx, s.prefix+name).Bytes()
		return err
	})
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: get %q: %w", name, err)
	}
	return b, nil
}

// Put stores data under name, with no expiry. A blob over MaxBlob bytes
// is refused: Get could not read it back.
func (s *Store) Put(ctx context.Context, name string, data []byte) error {
	if len(data) > MaxBlob {
		return fmt.Errorf("store: put %q: %d bytes is over %d", name, len(data), MaxBlob)
	}
	err := s.retry(ctx, func(ctx context.Context, _ int) error {
		return s.c.Set(ctx, s.prefix+name, data, 0).Err()
	})
	if err != nil {
		return fmt.Errorf("store: put %q: %w", name, err)
	}
	return nil
}

// Delete removes name; removing what is not there is no error.
func (s *Store) Delete(ctx context.Context, name string) error {
	err := s.retry(ctx, func(ctx context.Context, _ int) error {
		return s.c.Del(ctx, s.prefix+name).Err()
	})
	if err != nil {
		return fmt.Errorf("store: delete %q: %w", name, err)
	}
	return nil
}

// TryLock takes the lock name for ttl unless another holder has it: SET
// NX PX with a random token, which Unlock must present. ok is false when
// the lock is held elsewhere. A retry after a lost answer finds its own
// token and counts as taken.
func (s *Store) TryLock(ctx context.Context, name string, ttl time.Duration) (token string, ok bool, err error) {
	var b [16]byte
	rand.Read(b[:])
	token = hex.EncodeToString(b[:])
	key := s.prefix + "lock:" + name
	err = s.retry(ctx, func(ctx context.Context, attempt int) error {
		var err error
		if ok, err = s.c.SetNX(ctx, key, token, ttl).Result(); err != nil || ok || attempt == 0 {
			return err
		}
		v, err := s.c.Get(ctx, key).Result()
		ok = err == nil && v == token
		if errors.Is(err, redis.Nil) {
			err = nil
		}
		return err
	})
	if err != nil {
		return "", false, fmt.Errorf("store: lock %q: %w", name, err)
	}
	return token, ok, nil
}

// unlock deletes the lock only when it still holds the token: a holder
// whose lock expired and was taken by another must not free the other's.
var unlock = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

// Unlock releases the lock name if token still holds it.
func (s *Store) Unlock(ctx context.Context, name, token string) error {
	err := s.retry(ctx, func(ctx context.Context, _ int) error {
		return unlock.Run(ctx, s.c, []string{s.prefix + "lock:" + name}, token).Err()
	})
	if err != nil {
		return fmt.Errorf("store: unlock %q: %w", name, err)
	}
	return nil
}
