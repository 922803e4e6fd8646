package balance

import (
	"fmt"
	"math"
	"testing"
)

func nodes(weights ...int) []*Node {
	var ns []*Node
	for i, w := range weights {
		ns = append(ns, NewNode(fmt.Sprintf("n%d", i), w))
	}
	return ns
}

func counts(t *testing.T, p Policy, n, picks int, key func(i int) []byte) []int {
	t.Helper()
	c := make([]int, n)
	for i := 0; i < picks; i++ {
		var k []byte
		if key != nil {
			k = key(i)
		}
		j := p.Pick(k, nil)
		if j < 0 {
			t.Fatal("no pick")
		}
		c[j]++
	}
	return c
}

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol*want }

func TestRoundRobin(t *testing.T) {
	ns := nodes(1, 1, 1)
	p, _ := New("round_robin", ns)
	if c := counts(t, p, 3, 300, nil); c[0] != 100 || c[1] != 100 || c[2] != 100 {
		t.Errorf("equal weights: %v", c)
	}
	ns[1].SetDown(true)
	if c := counts(t, p, 3, 6000, nil); c[1] != 0 || !near(float64(c[0]), 3000, 0.1) {
		t.Errorf("equal weights, node 1 down: %v", c)
	}
	ns = nodes(5, 1, 1)
	p, _ = New("", ns)
	seq := ""
	for i := 0; i < 7; i++ {
		seq += fmt.Sprint(p.Pick(nil, nil))
	}
	// nginx's smooth weighted round robin spreads the heavy node out.
	if seq != "0010200" {
		t.Errorf("smooth sequence %s, want 0010200", seq)
	}
	ns[0].SetDown(true)
	if c := counts(t, p, 3, 6000, nil); c[0] != 0 || !near(float64(c[1]), 3000, 0.1) {
		t.Errorf("with node 0 down: %v", c)
	}
	if j := p.Pick(nil, []int{1, 2}); j != -1 {
		t.Errorf("all tried or down: %d", j)
	}
}

func TestLeastConn(t *testing.T) {
	ns := nodes(1, 1, 1)
	p, _ := New("least_conn", ns)
	ns[0].InFlight.Store(5)
	ns[1].InFlight.Store(1)
	ns[2].InFlight.Store(3)
	if j := p.Pick(nil, nil); j != 1 {
		t.Errorf("picked %d, want 1", j)
	}
	if j := p.Pick(nil, []int{1}); j != 2 {
		t.Errorf("with 1 tried: %d, want 2", j)
	}
	// Ties rotate.
	ns[0].InFlight.Store(0)
	ns[1].InFlight.Store(0)
	ns[2].InFlight.Store(0)
	if c := counts(t, p, 3, 300, nil); c[0] != 100 || c[1] != 100 || c[2] != 100 {
		t.Errorf("ties: %v", c)
	}
}

func TestRandomTwo(t *testing.T) {
	ns := nodes(1, 1, 1, 1)
	p, _ := New("random_two", ns)
	ns[3].InFlight.Store(100)
	c := counts(t, p, 4, 4000, nil)
	if c[3] != 0 {
		t.Errorf("busiest node picked %d times: %v", c[3], c)
	}
	for i := 0; i < 3; i++ {
		if !near(float64(c[i]), 4000.0/3, 0.15) {
			t.Errorf("spread %v", c)
		}
	}
	ns[0].SetDown(true)
	ns[1].SetDown(true)
	ns[2].SetDown(true)
	if j := p.Pick(nil, nil); j != 3 {
		t.Errorf("only node 3 up: %d", j)
	}
}

func TestHashConsistent(t *testing.T) {
	ns := nodes(1, 1, 1, 1)
	p, _ := New("ip_hash", ns)
	key := func(i int) []byte { return []byte(fmt.Sprintf("10.0.%d.%d", i/256, i%256)) }
	c := counts(t, p, 4, 8000, key)
	for _, n := range c {
		if !near(float64(n), 2000, 0.1) {
			t.Errorf("spread %v", c)
		}
	}
	before := make([]int, 8000)
	for i := range before {
		before[i] = p.Pick(key(i), nil)
		if again := p.Pick(key(i), nil); again != before[i] {
			t.Fatal("same key, different node")
		}
	}
	ns[2].SetDown(true)
	moved := 0
	for i := range before {
		j := p.Pick(key(i), nil)
		if j == 2 {
			t.Fatal("picked a down node")
		}
		if before[i] != 2 && j != before[i] {
			moved++
		}
	}
	if moved != 0 {
		t.Errorf("%d keys moved off healthy nodes", moved)
	}
	// Weighted.
	ns = nodes(3, 1)
	p, _ = New("header_hash", ns)
	c = counts(t, p, 2, 8000, key)
	if !near(float64(c[0]), 6000, 0.05) {
		t.Errorf("weighted spread %v", c)
	}
	// No key: round robin.
	if c := counts(t, p, 2, 4, nil); c[0] == 0 || c[1] == 0 {
		t.Errorf("no key: %v", c)
	}
}

func TestCookie(t *testing.T) {
	ns := nodes(1, 1, 1)
	p, _ := New("cookie", ns)
	for i := 0; i < 10; i++ {
		if j := p.Pick([]byte(ns[2].ID), nil); j != 2 {
			t.Fatalf("sticky: %d", j)
		}
	}
	ns[2].Eject(1e9)
	if j := p.Pick([]byte(ns[2].ID), nil); j == 2 || j < 0 {
		t.Errorf("ejected sticky node: %d", j)
	}
	if c := counts(t, p, 3, 3000, func(int) []byte { return []byte("unknown") }); c[2] != 0 || !near(float64(c[0]), 1500, 0.1) {
		t.Errorf("unknown cookie: %v", c)
	}
}

func TestUnknown(t *testing.T) {
	if _, err := New("fastest", nodes(1)); err == nil {
		t.Error("unknown policy accepted")
	}
}

func TestNoAlloc(t *testing.T) {
	for _, name := range Names {
		p, _ := New(name, nodes(1, 2, 3))
		key := []byte("203.0.113.7")
		tried := []int{0}
		if n := testing.AllocsPerRun(100, func() { p.Pick(key, tried) }); n != 0 {
			t.Errorf("%s: %v allocs", name, n)
		}
	}
}

func BenchmarkBalance_Pick(b *testing.B) {
	for _, name := range Names {
		for _, w := range [][]int{{1, 1, 1, 1, 1, 1, 1, 1}, {1, 2, 3, 4, 5, 6, 7, 8}} {
			label := "equal"
			if w[1] != 1 {
				label = "weighted"
			}
			b.Run(name+"/"+label, func(b *testing.B) {
				p, _ := New(name, nodes(w...))
				key := []byte("203.0.113.7")
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						p.Pick(key, nil)
					}
				})
			})
		}
	}
}
