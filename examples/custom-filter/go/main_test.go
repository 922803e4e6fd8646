package main

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/sdk/go/sluicetest"
)

func TestFilter(t *testing.T) {
	f := sluicetest.New(t, `{"header": "X-Hello", "value": "world", "deny_prefix": "/private/"}`)

	res := f.Do(sluicetest.NewRequest("GET", "/public/a", ""))
	if !res.Next || res.Request.Header.Get("X-Hello") != "world" {
		t.Errorf("/public/a: next=%v X-Hello=%q, want continued with world", res.Next, res.Request.Header.Get("X-Hello"))
	}
	res = f.Do(sluicetest.NewRequest("GET", "/private/a", ""))
	if res.Next || res.Status != 403 || string(res.Body) != "forbidden\n" {
		t.Errorf("/private/a: next=%v status=%d body=%q, want 403 forbidden", res.Next, res.Status, res.Body)
	}
}

func TestUnknownConfigField(t *testing.T) {
	if _, err := sluicetest.Load(`{"hedaer": "x"}`); err == nil {
		t.Fatal("a misspelt config field loaded without error")
	}
}

// TestDifferential: sluicetest answers as the server, `sluice filter run`
// and the http-wasm reference host do, whose answers to the same requests
// are ../testdata/differential.golden (written and checked by the
// custom-filter package's TestDifferential; the upstream here is a copy
// of its upstream).
func TestDifferential(t *testing.T) {
	golden, err := os.ReadFile("../testdata/differential.golden")
	if err != nil {
		t.Fatal(err)
	}
	f := sluicetest.New(t, `{"header": "X-Example", "value": "from go", "deny_prefix": "/go/private/"}`)
	f.Next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Upstream", "yes")
		w.Header().Set("X-Saw-Example", r.Header.Get("X-Example"))
		w.Header()["X-Saw-Debug"] = r.Header["X-Debug"]
		fmt.Fprintf(w, "upstream saw %s %s\n", r.Method, r.URL.RequestURI())
	})
	agents := map[string]string{"continue": "curl/8", "query": "curl/8", "query-malformed": "curl/8", "deny": `a "quoted" agent`, "deny-no-agent": ""}
	cases := strings.Split(string(golden), "=== ")[1:]
	if len(cases) != len(agents) {
		t.Fatalf("%d cases in the golden file, want %d", len(cases), len(agents))
	}
	for _, c := range cases {
		head, want, _ := strings.Cut(c, "\n")
		name, path, _ := strings.Cut(head, " ")
		req := sluicetest.NewRequest("GET", path, "")
		req.Header.Set("User-Agent", agents[name])
		res := f.Do(req)
		var lines []string
		for k, vs := range res.Header {
			lines = append(lines, k+": "+strings.Join(vs, ", "))
		}
		slices.Sort(lines)
		have := fmt.Sprintf("%d\n%s\n\n%s\n", res.Status, strings.Join(lines, "\n"), res.Body)
		if have != want {
			t.Errorf("%s: sluicetest\n%s\n--- the server, filter run and the reference host\n%s", name, have, want)
		}
	}
}
