package gateway

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/proxy/forwarded"
)

// RateLimit configures a token-bucket limiter: each key (a client, say)
// gets Burst tokens, refilled at Rate per second; a request takes one.
type RateLimit struct {
	// Rate is tokens added per second; must be positive. In a config,
	// `rate = "N/s"` ("/m", "/h").
	Rate float64 `hcl:"rate,custom" type:"rate" default:"required" doc:"refill, like |\"100/s\"|, |\"6000/m\"| or |\"10/h\"| (a fraction is allowed: |\"0.5/s\"|)"`
	// Burst is the bucket size: how many requests may come at once;
	// default 1 (in a config, the rate per second rounded up, at least
	// 1).
	Burst int `hcl:"burst,min=1" default:"the rate per second rounded up, at least 1" doc:"bucket size"`
	// Key is what gets a bucket: "client_ip" (default), "header:NAME"
	// (the header's value), or "consumer" (the ConsumerHeader an auth
	// filter set). Requests that lack the header are keyed by client
	// address.
	Key string `hcl:"key" doc:"|\"client_ip\"|, |\"header:NAME\"| or |\"consumer\"| (the identity an auth filter set)"`
	// ConsumerHeader is the header "consumer" reads; default
	// "X-Consumer".
	ConsumerHeader string
	// MaxKeys bounds the buckets kept, and so the memory used; default
	// 100000. Beyond it the stalest bucket of a set is recycled (a full
	// one first, which loses nothing).
	MaxKeys int `hcl:"max_keys,min=1" doc:"buckets kept; the least recently used go first"`
	// TrustedProxies are peers whose X-Forwarded-For is believed when
	// deciding the client address.
	TrustedProxies []netip.Prefix

	// Shared, when set, makes the limit global: the buckets live there
	// (host/store, on Redis), shared with every instance that names the
	// same limit, and the limiter keeps only a local allowance per key.
	Shared Shared
	// Name tells one limit's shared buckets from another's; it must be
	// the same on every instance ("site/route").
	Name string
	// Allowance is how many tokens one call to Shared may take for a key,
	// spent locally before the next call; 0 means Rate/100 (the tokens
	// of 10 ms), at least 1, at most a quarter of Burst and 100. See RATIONALE.md,
	// "Why may a global rate limit admit a little more than its rate?".
	Allowance int
	// OnStoreError decides requests while Shared cannot be asked:
	// "local" (a config's default with a store) counts them in this
	// instance's own buckets, as without a store; "deny" refuses them
	// (503); "allow" or "" admits them.
	OnStoreError string `hcl:"on_store_error,oneof=local|allow|deny" json:"on_store_error,omitempty" default:"|\"local\"|" doc:"with a [|store|](#store), while Redis cannot be asked: |\"local\"| limits each instance by its own buckets (so N instances admit up to N times the rate), |\"allow\"| admits every request, |\"deny\"| answers 503 with |Retry-After: 1|; for 100 ms after a failure before asking again"`
}

// Shared is a token bucket kept outside the process, shared by several
// instances (host/store.Store).
type Shared interface {
	// Take takes up to want tokens from the bucket key, refilled at rate
	// per second up to burst: how many it got and, when none, how long
	// until one will be. It returns within its own deadline.
	Take(ctx context.Context, key string, rate float64, burst, want int) (got int, wait time.Duration, err error)
}

// Limiter is a sharded token-bucket limiter with a fixed memory bound. It
// is safe for concurrent use, and Allow does not allocate.
type Limiter struct {
	rate    float64 // tokens per nanosecond
	burst   float64
	header  string // key header, or "" for client_ip
	trusted []netip.Prefix
	seed    maphash.Seed
	sets    []set
	mask    uint64
	epoch   time.Time

	// With a Shared store: the buckets there, local allowances here.
	shared    Shared
	name      string
	rps       float64 // tokens per second, as the store counts
	allowance int
	deny      bool
	local     *Limiter     // on_store_error "local": the buckets used while the store fails
	downUntil atomic.Int64 // limiter clock; no store calls before it

	policy string          // the RateLimit-Policy header
	counts *decisionCounts // sluice_rate_limit_decisions_total, by Name
}

// Verdict is a limiter's decision on one request.
type Verdict uint8

// The verdicts.
const (
	Admit       Verdict = iota // under the limit
	Over                       // over it: 429
	Unavailable                // the shared store failed and OnStoreError "deny": 503
)

// Decision is a limiter's answer for one request.
type Decision struct {
	Verdict Verdict
	// Wait is how long until the key has a token again, when none is
	// left.
	Wait time.Duration
	// Remaining is how many tokens the key has left after this request,
	// or -1 where this instance does not know (a shared limit between
	// round trips to the store).
	Remaining int
	// StoreFailed tells that the store could not be asked and
	// OnStoreError decided.
	StoreFailed bool
}

const (
	// leaseTTL is how long a local allowance may be spent; older tokens
	// are dropped (never spent late).
	leaseTTL = int64(time.Second)
	// storeBackoff is how long after a store error the limiter decides
	// by OnStoreError without asking the store again.
	storeBackoff = int64(100 * time.Millisecond)
)

const ways = 8 // buckets per set

// set is a small, fully associative group of buckets behind one lock: a
// key can only live in the set its hash picks, so a full table evicts
// within one set and lookups touch one cache-friendly block.
type set struct {
	mu sync.Mutex
	b  [ways]bucket
	_  [24]byte // keep neighbouring sets' locks off each other's lines
}

type bucket struct {
	key    uint64 // 0: empty
	tokens float64
	last   int64 // nanoseconds since epoch of the last refill
}

// NewLimiter checks c and returns a limiter.
func NewLimiter(c RateLimit) (*Limiter, error) {
	if !(c.Rate > 0) || math.IsInf(c.Rate, 0) {
		return nil, fmt.Errorf("rate limit: rate must be positive, got %v", c.Rate)
	}
	if c.Burst < 0 || c.MaxKeys < 0 {
		return nil, errors.New("rate limit: burst and max_keys must not be negative")
	}
	var err error
	l := &Limiter{
		rate:    c.Rate / 1e9,
		burst:   float64(max(c.Burst, 1)),
		seed:    maphash.MakeSeed(),
		trusted: c.TrustedProxies,
		epoch:   time.Now(),
	}
	switch k := c.Key; {
	case k == "" || k == "client_ip":
	case k == "consumer":
		l.header = c.ConsumerHeader
		if l.header == "" {
			l.header = "X-Consumer"
		}
	case strings.HasPrefix(k, "header:") && len(k) > len("header:"):
		l.header = k[len("header:"):]
	default:
		return nil, fmt.Errorf("rate limit: key %q: want client_ip, header:NAME or consumer", k)
	}
	keys := c.MaxKeys
	if keys == 0 {
		keys = 100000
	}
	n := 1
	for n*ways < keys {
		n <<= 1
	}
	l.sets = make([]set, n)
	l.mask = uint64(n - 1)
	l.name = c.Name
	l.policy = fmt.Sprintf(`"default";q=%d;w=%d`, int(l.burst), max(1, int(math.Ceil(l.burst/c.Rate))))
	if c.Name != "" {
		l.counts = countsFor(c.Name)
	}
	if c.Shared != nil {
		l.shared, l.rps, l.deny = c.Shared, c.Rate, c.OnStoreError == "deny"
		if c.OnStoreError == "local" {
			lc := c
			lc.Shared, lc.Name = nil, ""
			if l.local, err = NewLimiter(lc); err != nil {
				return nil, err
			}
		}
		l.allowance = c.Allowance
		if l.allowance <= 0 {
			// A quarter of the burst at most, so that one instance's
			// allowance cannot hold a client's whole burst while the
			// others refuse it.
			l.allowance = min(int(math.Ceil(c.Rate/100)), int(l.burst)/4, 100)
		}
		l.allowance = max(l.allowance, 1)
	}
	return l, nil
}

// Allow takes a token for the request's key. When none is left it
// returns false and how long until one will be.
func (l *Limiter) Allow(x exchange.Exchange) (ok bool, retryAfter time.Duration) {
	v, wait := l.Decide(x)
	return v == Admit, wait
}

// Decide is Allow with the store's failure told apart from the limit.
func (l *Limiter) Decide(x exchange.Exchange) (Verdict, time.Duration) {
	d := l.Check(x)
	return d.Verdict, d.Wait
}

// Check decides the request and counts the decision.
func (l *Limiter) Check(x exchange.Exchange) Decision {
	d := l.check(x)
	l.count(d)
	return d
}

func (l *Limiter) check(x exchange.Exchange) Decision {
	var h, stable uint64
	if l.header != "" {
		if v := x.RequestHeader(l.header); len(v) > 0 {
			h = maphash.Bytes(l.seed, v)
			if l.shared != nil {
				stable = fnv(v)
			}
		}
	}
	if h == 0 {
		a := clientAddr(x, l.trusted).As16()
		h = maphash.Bytes(l.seed, a[:]) ^ 0x9e3779b97f4a7c15
		if l.shared != nil {
			stable = fnv(a[:]) ^ 0x9e3779b97f4a7c15
		}
	}
	now := time.Since(l.epoch).Nanoseconds()
	if l.shared != nil {
		d := l.allowShared(h, stable, now)
		if d.StoreFailed && l.local != nil {
			// The local table hashes with its own seed: h is this
			// limiter's, which is as good a key for it.
			d = l.local.take(h, time.Since(l.local.epoch).Nanoseconds())
			d.StoreFailed = true
		}
		return d
	}
	return l.take(h, now)
}

// take is a local bucket's decision.
func (l *Limiter) take(h uint64, now int64) Decision {
	ok, wait, left := l.allowKey(h, now)
	if !ok {
		return Decision{Verdict: Over, Wait: wait}
	}
	return Decision{Verdict: Admit, Remaining: int(left)}
}

// allowShared spends the key's local allowance, or takes a new one from
// the store. h picks the local bucket (seeded per process); stable names
// the shared one (the same on every instance).
//
// One request at a time per key fetches an allowance (tokens = -1 marks
// the fetch in flight); the others that find none meanwhile take one
// token each for themselves. So an instance never holds more than one
// allowance unspent, and none is thrown away.
func (l *Limiter) allowShared(h, stable uint64, now int64) Decision {
	if h == 0 {
		h = 1
	}
	s := &l.sets[(h>>32^h)&l.mask]
	s.mu.Lock()
	b := s.lease(h)
	fresh := now-b.last < leaseTTL
	if b.tokens >= 1 && fresh {
		b.tokens--
		s.mu.Unlock()
		return Decision{Verdict: Admit, Remaining: -1}
	}
	if now < l.downUntil.Load() {
		s.mu.Unlock()
		return l.storeFailed()
	}
	want := 1
	if b.tokens >= 0 || !fresh {
		b.tokens, b.last, want = -1, now, l.allowance
	}
	s.mu.Unlock()

	var key [16]byte
	hex.Encode(key[:], binaryBE(stable))
	got, wait, err := l.shared.Take(context.Background(), l.name+":"+string(key[:]), l.rps, int(l.burst), want)
	if want > 1 {
		s.mu.Lock()
		if b := s.lease(h); b.tokens < 0 {
			b.tokens = 0
			if got > 1 {
				b.tokens = float64(min(got, l.allowance) - 1)
				b.last = now
			}
		}
		s.mu.Unlock()
	}
	if err != nil {
		l.downUntil.Store(now + storeBackoff)
		return l.storeFailed()
	}
	if got == 0 {
		return Decision{Verdict: Over, Wait: wait}
	}
	return Decision{Verdict: Admit, Remaining: -1}
}

func (l *Limiter) storeFailed() Decision {
	if l.deny {
		return Decision{Verdict: Unavailable, Wait: time.Second, Remaining: -1, StoreFailed: true}
	}
	return Decision{Verdict: Admit, Remaining: -1, StoreFailed: true}
}

// lease returns h's local allowance, recycling the oldest of the set
// when h has none (forgetting one loses at most an allowance).
func (s *set) lease(h uint64) *bucket {
	victim := 0
	for i := range s.b {
		b := &s.b[i]
		if b.key == h {
			return b
		}
		if v := &s.b[victim]; v.key != 0 && (b.key == 0 || b.last < v.last) {
			victim = i
		}
	}
	b := &s.b[victim]
	*b = bucket{key: h, last: math.MinInt64 / 2}
	return b
}

// fnv is FNV-1a, 64 bits: a hash every instance computes alike.
func fnv(p []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range p {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

func binaryBE(v uint64) []byte {
	return []byte{byte(v >> 56), byte(v >> 48), byte(v >> 40), byte(v >> 32), byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
}

// AllowKey is Allow for a key already hashed, at now (nanoseconds on the
// limiter's clock).
func (l *Limiter) AllowKey(h uint64, now int64) (bool, time.Duration) {
	ok, wait, _ := l.allowKey(h, now)
	return ok, wait
}

// allowKey is AllowKey that also tells the tokens left.
func (l *Limiter) allowKey(h uint64, now int64) (bool, time.Duration, float64) {
	if h == 0 {
		h = 1 // 0 marks an empty bucket
	}
	s := &l.sets[(h>>32^h)&l.mask]
	s.mu.Lock()
	b := s.find(h, now, l)
	b.tokens = math.Min(l.burst, b.tokens+float64(now-b.last)*l.rate)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		left := b.tokens
		s.mu.Unlock()
		return true, 0, left
	}
	wait := time.Duration((1 - b.tokens) / l.rate)
	s.mu.Unlock()
	return false, wait, 0
}

// find returns h's bucket, recycling one when h has none: an empty one,
// else one that has refilled to full (forgetting it loses nothing), else
// the one idle longest.
func (s *set) find(h uint64, now int64, l *Limiter) *bucket {
	victim := -1
	for i := range s.b {
		b := &s.b[i]
		if b.key == h {
			return b
		}
		if victim >= 0 && s.b[victim].key == 0 {
			continue
		}
		switch {
		case b.key == 0:
			victim = i
		case victim < 0:
			victim = i
		default:
			v := &s.b[victim]
			full := b.tokens+float64(now-b.last)*l.rate >= l.burst
			vfull := v.tokens+float64(now-v.last)*l.rate >= l.burst
			if (full && !vfull) || (full == vfull && b.last < v.last) {
				victim = i
			}
		}
	}
	b := &s.b[victim]
	*b = bucket{key: h, tokens: l.burst, last: now}
	return b
}

// Keys returns how many buckets are in use, for tests and metrics.
func (l *Limiter) Keys() int {
	n := 0
	for i := range l.sets {
		s := &l.sets[i]
		s.mu.Lock()
		for _, b := range s.b {
			if b.key != 0 {
				n++
			}
		}
		s.mu.Unlock()
	}
	return n
}

// Capacity is the most buckets the limiter keeps.
func (l *Limiter) Capacity() int { return len(l.sets) * ways }

func clientAddr(x exchange.Exchange, trusted []netip.Prefix) netip.Addr {
	peer := forwarded.Peer(x.RemoteAddr()) // the client the front door decided
	if len(trusted) == 0 || exchange.PeerTrusted(x) {
		return peer
	}
	return forwarded.Client(peer, x.RequestHeader("X-Forwarded-For"), x.RequestHeader("Forwarded"), trusted)
}
