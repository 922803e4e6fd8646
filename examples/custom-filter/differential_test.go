package customfilter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/http-wasm/http-wasm-host-go/handler"
	wasm "github.com/http-wasm/http-wasm-host-go/handler/nethttp"
	"github.com/tetratelabs/wazero"

	"github.com/sluicehq/sluice/examples/internal/exampletest"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/filtertest"
)

var update = flag.Bool("update", false, "rewrite testdata/differential.golden")

// upstream is the next handler everywhere: what it saw, in headers and
// body, and headers of its own, one of them (Content-Type) one the
// filter's request phase could also set.
var upstream = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Upstream", "yes")
	w.Header().Set("X-Saw-Example", r.Header.Get("X-Example"))
	w.Header()["X-Saw-Debug"] = r.Header["X-Debug"]
	fmt.Fprintf(w, "upstream saw %s %s\n", r.Method, r.URL.RequestURI())
})

// diffRequests are the requests of the differential test, under a
// language's route prefix.
var diffRequests = []struct {
	name, path, agent string
}{
	{"continue", "hello?x=1&y=%zz", "curl/8"},
	{"query", "hello?y=%zz&debug=a+b%21", "curl/8"},
	{"query-malformed", "hello?debug=%zz", "curl/8"},
	{"deny", "private/x", `a "quoted" agent`},
	{"deny-no-agent", "private/y", ""},
}

// snapshot is the comparable part of a response: status, the headers a
// filter or upstream set (not those each server adds) and the body.
func snapshot(status int, h http.Header, body []byte) string {
	var lines []string
	for k, vs := range h {
		switch k {
		case "Date", "Content-Length", "Server", "Connection", "Via", "Alt-Svc":
			continue
		}
		lines = append(lines, k+": "+strings.Join(vs, ", "))
	}
	slices.Sort(lines)
	return fmt.Sprintf("%d\n%s\n\n%s", status, strings.Join(lines, "\n"), body)
}

func httpSnapshot(t *testing.T, base, path, agent string) string {
	t.Helper()
	req, err := http.NewRequest("GET", base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", agent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return snapshot(resp.StatusCode, resp.Header, body)
}

// hclConfig is a language's filter config in sluice.hcl, as JSON.
func hclConfig(dir, prefix string) []byte {
	short := strings.Trim(prefix, "/")
	b, _ := json.Marshal(map[string]string{"header": "X-Example", "value": "from " + dir, "deny_prefix": "/" + short + "/private/"})
	return b
}

// TestDifferential runs each language's filter on the same requests
// through the server (sluice.hcl, a served route in front of an
// upstream), through `sluice filter run`'s runtime path (filtertest), and
// through the http-wasm reference host (github.com/http-wasm/http-wasm-host-go),
// all with the same upstream: the responses must be the same, and the
// four languages' log lines the same. The Go filter's responses are also
// testdata/differential.golden, which go/main_test.go checks sluicetest
// against: so the server, `filter run`, sluicetest and the reference host
// agree, including on response headers set before the upstream
// (sdk/ABI.md).
func TestDifferential(t *testing.T) {
	up := httptest.NewServer(upstream)
	defer up.Close()
	listen := exampletest.FreeAddr(t)
	exampletest.Boot(t, map[string]string{"http://127.0.0.1:9000": up.URL, "127.0.0.1:8080": listen})
	served := "http://" + listen

	ctx := context.Background()
	var golden strings.Builder
	logsOf := map[string][]string{}
	for _, l := range languages {
		t.Run(l.dir, func(t *testing.T) {
			bin, err := os.ReadFile(filepath.Join(l.dir, "filter.wasm"))
			if err != nil {
				t.Fatal(err)
			}
			cfg := hclConfig(l.dir, l.prefix)

			// The SDKs build WASI reactors: the reference host runs their
			// _initialize when told to (sluice always does).
			mw, err := wasm.NewMiddleware(ctx, bin, handler.GuestConfig(cfg),
				handler.ModuleConfig(wazero.NewModuleConfig().WithStartFunctions("_initialize")))
			if err != nil {
				t.Fatal(err)
			}
			defer mw.Close(ctx)
			ref := httptest.NewServer(mw.NewHandler(ctx, upstream))
			defer ref.Close()

			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{
				ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
					if a.Key == "time" || a.Key == "filter" || a.Key == "digest" {
						return slog.Attr{}
					}
					return a
				},
			}))
			f, err := filtertest.Load(ctx, l.dir, bin, runtime.FilterOptions{Config: cfg, PoolSize: 1, MemoryLimit: 64 << 20}, log, "")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()

			for _, dr := range diffRequests {
				path := l.prefix + dr.path
				want := httpSnapshot(t, ref.URL, path, dr.agent)
				if have := httpSnapshot(t, served, path, dr.agent); have != want {
					t.Errorf("%s: served route\n%s\n--- reference host\n%s", dr.name, have, want)
				}

				x := filtertest.NewExchange("GET", path, "User-Agent", dr.agent)
				_, err := f.Do(x, func(x *filtertest.Exchange) {
					r := httptest.NewRequest(x.Meth, x.URI, nil)
					for _, h := range x.ReqHdr {
						r.Header.Add(h.Name, h.Value)
					}
					rec := httptest.NewRecorder()
					upstream.ServeHTTP(rec, r)
					x.SetStatus(rec.Code)
					for k, vs := range rec.Header() {
						for _, v := range vs {
							x.AddResponseHeader(k, v)
						}
					}
					x.RespBody.Write(rec.Body.Bytes())
				})
				if err != nil {
					t.Fatalf("%s: filter run: %v", dr.name, err)
				}
				h := http.Header{}
				for _, f := range x.RespHdr {
					h.Add(f.Name, f.Value)
				}
				if have := snapshot(x.Status(), h, x.RespBody.Bytes()); have != want {
					t.Errorf("%s: filter run\n%s\n--- reference host\n%s", dr.name, have, want)
				}
				if l.dir == "go" {
					fmt.Fprintf(&golden, "=== %s %s\n%s\n", dr.name, path, want)
				}
			}
			short := "/" + strings.Trim(l.prefix, "/") + "/"
			for line := range strings.SplitSeq(logs.String(), "\n") {
				if strings.HasSuffix(line, "source=guest") {
					logsOf[l.dir] = append(logsOf[l.dir], strings.ReplaceAll(line, short, "/PREFIX/"))
				}
			}
		})
	}

	// The structured log call writes the same line in every SDK, and its
	// pairs are the log line's fields.
	want := []string{
		`level=INFO msg=denied path=/PREFIX/private/x agent="a \"quoted\" agent" source=guest`,
		`level=INFO msg=denied path=/PREFIX/private/y agent="" source=guest`,
	}
	for dir, logs := range logsOf {
		if !slices.Equal(logs, want) {
			t.Errorf("%s logged\n%s\nwant\n%s", dir, strings.Join(logs, "\n"), strings.Join(want, "\n"))
		}
	}

	const goldenPath = "testdata/differential.golden"
	if *update {
		if err := os.WriteFile(goldenPath, []byte(golden.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if have, err := os.ReadFile(goldenPath); err != nil || string(have) != golden.String() {
		t.Errorf("%s differs from the reference host's answers (go test -run TestDifferential -update rewrites it):\n%s\nwant\n%s", goldenPath, have, golden.String())
	}
}
