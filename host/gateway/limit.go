package gateway

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/proxy/forwarded"
)

// RateLimit configures a token-bucket limiter: each key (a client, say)
// gets Burst tokens, refilled at Rate per second; a request takes one.
type RateLimit struct {
	// Rate is tokens added per second; must be positive.
	Rate float64
	// Burst is the bucket size: how many requests may come at once;
	// default 1.
	Burst int
	// Key is what gets a bucket: "client_ip" (default), "header:NAME"
	// (the header's value), or "consumer" (the ConsumerHeader an auth
	// filter set). Requests that lack the header are keyed by client
	// address.
	Key string
	// ConsumerHeader is the header "consumer" reads; default
	// "X-Consumer".
	ConsumerHeader string
	// MaxKeys bounds the buckets kept, and so the memory used; default
	// 100000. Beyond it the stalest bucket of a set is recycled (a full
	// one first, which loses nothing).
	MaxKeys int
	// TrustedProxies are peers whose X-Forwarded-For is believed when
	// deciding the client address.
	TrustedProxies []netip.Prefix
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
}

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
	return l, nil
}

// Allow takes a token for the request's key. When none is left it
// returns false and how long until one will be.
func (l *Limiter) Allow(x exchange.Exchange) (ok bool, retryAfter time.Duration) {
	var h uint64
	if l.header != "" {
		if v := x.RequestHeader(l.header); len(v) > 0 {
			h = maphash.Bytes(l.seed, v)
		}
	}
	if h == 0 {
		a := clientAddr(x, l.trusted).As16()
		h = maphash.Bytes(l.seed, a[:]) ^ 0x9e3779b97f4a7c15
	}
	return l.AllowKey(h, time.Since(l.epoch).Nanoseconds())
}

// AllowKey is Allow for a key already hashed, at now (nanoseconds on the
// limiter's clock).
func (l *Limiter) AllowKey(h uint64, now int64) (bool, time.Duration) {
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
		s.mu.Unlock()
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) / l.rate)
	s.mu.Unlock()
	return false, wait
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
