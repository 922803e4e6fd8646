package host

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// stackLine is a line of a route-stack list in a comment: a stage's
// name (indented four spaces at most), two spaces or more, what it
// does.
var stackLine = regexp.MustCompile(`^//\t {0,4}(\S+(?: \S+)*)  +\S`)

// stackNames returns the stage names of the list in file between the
// line holding from and the next one holding to.
func stackNames(t *testing.T, file, from, to string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), from)
	list, _, ok2 := strings.Cut(rest, to)
	if !ok || !ok2 {
		t.Fatalf("%s has no list between %q and %q", file, from, to)
	}
	var names []string
	for _, line := range strings.Split(list, "\n")[1:] {
		if m := stackLine.FindStringSubmatch(line); m != nil && !strings.HasPrefix(m[1], "(") {
			names = append(names, m[1])
		}
	}
	return names
}

// TestHouseRouteStack: doc.go quotes the route stack as
// host/generation's routeStack lists it, stage by stage, in order.
func TestHouseRouteStack(t *testing.T) {
	want := stackNames(t, "generation/stack.go", "outermost first", "It is folded once")
	got := stackNames(t, "doc.go", "the route's stack, outermost first", "→ errors rendered")
	if len(want) < 7 || !slices.Equal(got, want) {
		t.Errorf("doc.go lists the route stack as %q, generation/stack.go as %q", got, want)
	}
}
