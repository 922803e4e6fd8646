// Package balance chooses the upstream for a request: the load-balancing
// policies of the proxy, over nodes whose health the proxy maintains.
//
// Every policy picks in constant memory and without allocating; the hash
// policies use rendezvous hashing, so that a node going down moves only the
// keys it held.
package balance

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Node is one upstream as the policies see it. The proxy keeps InFlight
// and the health state current.
type Node struct {
	// Weight is the node's share, at least 1.
	Weight int
	// ID names the node in sticky cookies; it reveals nothing of the
	// node's address.
	ID string
	// InFlight counts the requests the node is serving now.
	InFlight atomic.Int64

	key   uint64       // hash of ID, for rendezvous hashing
	down  atomic.Bool  // set by the active health check
	until atomic.Int64 // unix nanoseconds until which the node is ejected
}

// NewNode returns a node; weights below 1 count as 1.
func NewNode(id string, weight int) *Node {
	if weight < 1 {
		weight = 1
	}
	return &Node{Weight: weight, ID: id, key: mix(hashString(id))}
}

// Available reports whether the node may take requests: not marked down
// by the active check and not ejected by passive checks.
func (n *Node) Available() bool {
	if n.down.Load() {
		return false
	}
	u := n.until.Load()
	if u == 0 {
		return true
	}
	if time.Now().UnixNano() < u {
		return false
	}
	// The cool-down is over: readmit, and stop reading the clock.
	n.until.CompareAndSwap(u, 0)
	return true
}

// SetDown marks the node down or up, as the active health check decides.
func (n *Node) SetDown(down bool) { n.down.Store(down) }

// Down reports what SetDown last set.
func (n *Node) Down() bool { return n.down.Load() }

// Eject takes the node out of rotation for d.
func (n *Node) Eject(d time.Duration) { n.until.Store(time.Now().Add(d).UnixNano()) }

// Readmit ends a passive cool-down now (an active check vouched for the
// node); it reports whether one was running.
func (n *Node) Readmit() bool {
	u := n.until.Swap(0)
	return u != 0 && time.Now().UnixNano() < u
}

// Ejected reports whether the node is in a passive cool-down.
func (n *Node) Ejected() bool {
	u := n.until.Load()
	return u != 0 && time.Now().UnixNano() < u
}

// EjectedFor returns how much of the node's passive cool-down is left
// (0 when it is not ejected).
func (n *Node) EjectedFor() time.Duration {
	u := n.until.Load()
	if u == 0 {
		return 0
	}
	return max(0, time.Duration(u-time.Now().UnixNano()))
}

// Policy picks a node for a request.
type Policy interface {
	// Pick returns the index of the chosen node, or -1 when no node is
	// available. key feeds the hash and cookie policies (a client
	// address, a header value, a cookie value); nodes listed in tried are
	// skipped.
	Pick(key []byte, tried []int) int
}

// Names lists the policies New knows.
var Names = []string{"round_robin", "least_conn", "random_two", "ip_hash", "header_hash", "cookie"}

// New returns the named policy over nodes ("" is round_robin).
func New(name string, nodes []*Node) (Policy, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("balance: no nodes")
	}
	b := base{nodes: nodes, equal: true}
	for _, n := range nodes {
		if n.Weight != nodes[0].Weight {
			b.equal = false
		}
	}
	switch name {
	case "", "round_robin":
		return newRoundRobin(b), nil
	case "least_conn":
		return &leastConn{base: b}, nil
	case "random_two":
		return &randomTwo{leastConn{base: b}}, nil
	case "ip_hash", "header_hash":
		return &hash{rr: newRoundRobin(b)}, nil
	case "cookie":
		return &cookie{rr: newRoundRobin(b)}, nil
	}
	return nil, fmt.Errorf("balance: unknown policy %q (want one of %v)", name, Names)
}

type base struct {
	nodes []*Node
	equal bool // all weights equal
}

func (b *base) ok(i int, tried []int) bool {
	for _, t := range tried {
		if t == i {
			return false
		}
	}
	return b.nodes[i].Available()
}

// roundRobin is nginx's smooth weighted round robin; with equal weights it
// is a lock-free counter.
type roundRobin struct {
	base
	next atomic.Uint64
	mu   sync.Mutex
	cur  []int
}

func newRoundRobin(b base) *roundRobin {
	return &roundRobin{base: b, cur: make([]int, len(b.nodes))}
}

func (p *roundRobin) Pick(_ []byte, tried []int) int {
	n := len(p.nodes)
	if p.equal {
		start := int((p.next.Add(1) - 1) % uint64(n))
		if p.ok(start, tried) {
			return start
		}
		// Its turn goes to one of the others, uniformly (reservoir
		// sampling), so that the node after one that is out does not
		// take twice its share.
		pick, seen := -1, 0
		for i := 0; i < n; i++ {
			if p.ok(i, tried) {
				seen++
				if rand.IntN(seen) == 0 {
					pick = i
				}
			}
		}
		return pick
	}
	p.mu.Lock()
	best, total := -1, 0
	for i, nd := range p.nodes {
		if !p.ok(i, tried) {
			continue
		}
		p.cur[i] += nd.Weight
		total += nd.Weight
		if best < 0 || p.cur[i] > p.cur[best] {
			best = i
		}
	}
	if best >= 0 {
		p.cur[best] -= total
	}
	p.mu.Unlock()
	return best
}

// leastConn picks the node with the fewest requests in flight per unit of
// weight; ties go round in turn.
type leastConn struct {
	base
	next atomic.Uint64
}

func (p *leastConn) Pick(_ []byte, tried []int) int {
	n := len(p.nodes)
	start := int(p.next.Add(1) % uint64(n))
	best := -1
	var bestIn int64
	for k := 0; k < n; k++ {
		i := start + k
		if i >= n {
			i -= n
		}
		if !p.ok(i, tried) {
			continue
		}
		in := p.nodes[i].InFlight.Load()
		if best < 0 || in*int64(p.nodes[best].Weight) < bestIn*int64(p.nodes[i].Weight) {
			best, bestIn = i, in
		}
	}
	return best
}

// randomTwo samples two nodes and takes the one with less in flight
// (power of two choices), falling back to a scan when they are out.
type randomTwo struct{ leastConn }

func (p *randomTwo) Pick(key []byte, tried []int) int {
	n := len(p.nodes)
	if n == 1 {
		if p.ok(0, tried) {
			return 0
		}
		return -1
	}
	a := rand.IntN(n)
	b := rand.IntN(n - 1)
	if b >= a {
		b++
	}
	okA, okB := p.ok(a, tried), p.ok(b, tried)
	switch {
	case okA && okB:
		ia, ib := p.nodes[a].InFlight.Load(), p.nodes[b].InFlight.Load()
		if ib*int64(p.nodes[a].Weight) < ia*int64(p.nodes[b].Weight) {
			return b
		}
		return a
	case okA:
		return a
	case okB:
		return b
	}
	return p.leastConn.Pick(key, tried)
}

// hash is rendezvous (highest random weight) hashing over the available
// nodes: a key keeps its node while that node is up. An empty key goes
// round robin.
type hash struct{ rr *roundRobin }

func (p *hash) Pick(key []byte, tried []int) int {
	if len(key) == 0 {
		return p.rr.Pick(nil, tried)
	}
	h := mix(hashBytes(key))
	best := -1
	var bestScore uint64
	var bestW float64
	for i, nd := range p.rr.nodes {
		if !p.rr.ok(i, tried) {
			continue
		}
		s := mix(h ^ nd.key)
		if p.rr.equal {
			if best < 0 || s > bestScore {
				best, bestScore = i, s
			}
			continue
		}
		// Weighted rendezvous: -w/ln(u) for u uniform in (0,1).
		u := (float64(s>>11) + 0.5) / (1 << 53)
		w := -float64(nd.Weight) / math.Log(u)
		if best < 0 || w > bestW {
			best, bestW = i, w
		}
	}
	return best
}

// cookie keeps a client on the node its cookie names while that node is
// available; otherwise it goes round robin (and the proxy sets a new
// cookie).
type cookie struct{ rr *roundRobin }

func (p *cookie) Pick(key []byte, tried []int) int {
	if len(key) > 0 {
		for i, nd := range p.rr.nodes {
			if nd.ID == string(key) {
				if p.rr.ok(i, tried) {
					return i
				}
				break
			}
		}
	}
	return p.rr.Pick(nil, tried)
}

// FNV-1a, stable across processes so that several proxies hash alike.
func hashBytes(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// mix is the splitmix64 finalizer.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// HashString is the stable hash the proxy uses to derive node IDs.
func HashString(s string) uint64 { return mix(hashString(s)) }
