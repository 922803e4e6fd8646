package hostname_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/internal/hostname"
	"github.com/sluicehq/sluice/host/internal/hostname/hostnametest"
)

// TestLookup runs the shared table (hostnametest) through Table itself;
// route's and tlsconf's tests run it through theirs.
func TestLookup(t *testing.T) {
	tab := hostname.New[string]()
	for _, s := range hostnametest.Sites {
		for _, n := range append([]string{s.Name}, s.Aliases...) {
			if o, ok := tab.Add(n, s.Name); !ok {
				t.Fatalf("Add(%q): claimed by %q", n, o)
			}
		}
	}
	for _, c := range hostnametest.Names {
		got, ok := tab.Lookup([]byte(c.Name))
		if !ok {
			got = hostnametest.Default
		}
		if got != c.Site {
			t.Errorf("Lookup(%q) = %q, want %q", c.Name, got, c.Site)
		}
	}
	if _, ok := tab.Lookup([]byte(strings.Repeat("a", hostname.MaxLen+1))); ok {
		t.Error("a name longer than MaxLen selects a site")
	}
	if n := testing.AllocsPerRun(100, func() {
		for _, c := range hostnametest.Names {
			tab.Lookup([]byte(c.Name))
		}
	}); n != 0 {
		t.Errorf("Lookup allocates %v times", n)
	}
}

func TestAdd(t *testing.T) {
	tab := hostname.New[string]()
	tab.Add("a.test", "a")
	if _, ok := tab.Add("A.test.", "a"); !ok {
		t.Error("a site adding its own name twice is refused")
	}
	if o, ok := tab.Add("A.TEST", "b"); ok || o != "a" {
		t.Errorf("Add of a.test for a second site = %q, %v; want a, false", o, ok)
	}
	// Wildcards of the same length: the first added wins.
	tab.Add("*.x.test", "first")
	tab.Add("*.X.test", "second")
	if got, _ := tab.Lookup([]byte("h.x.test")); got != "first" {
		t.Errorf("h.x.test selects %q, want first", got)
	}
}
