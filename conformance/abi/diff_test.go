package abi_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	handlerapi "github.com/http-wasm/http-wasm-host-go/api/handler"
	"github.com/http-wasm/http-wasm-host-go/handler"
	wasm "github.com/http-wasm/http-wasm-host-go/handler/nethttp"

	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/runtime"
)

// echo is the next handler on both hosts: it reports what reached it.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("X-Next-Method", r.Method)
	w.Header().Set("X-Next-Uri", r.RequestURI)
	for k, vs := range r.Header {
		switch k {
		case "Content-Length", "Accept-Encoding", "User-Agent":
			continue // framing and client details, not filter behaviour
		}
		w.Header()["X-Next-Req-"+k] = vs
	}
	w.Write([]byte("next saw: "))
	w.Write(body)
})

type diffRequest struct {
	name   string
	method string
	path   string
	header http.Header
	body   string
}

var diffRequests = []diffRequest{
	{name: "get", method: "GET", path: "/"},
	{name: "query", method: "GET", path: "/v1.0/hi?name=panda"},
	{name: "host-route", method: "GET", path: "/host"},
	{name: "headers", method: "GET", path: "/a%2Fb?x=1&y=%26", header: http.Header{
		"Content-Type": {"text/plain"}, "Multi": {"one", "two"}, "Authorization": {"Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="},
	}},
	{name: "bad-auth", method: "GET", path: "/", header: http.Header{"Authorization": {"0"}}},
	{name: "post", method: "POST", path: "/v1.0/hi?name=panda", body: `{"hello": "panda"}`,
		header: http.Header{"Content-Type": {"application/json"}}},
	{name: "post-secret", method: "POST", path: "/", body: "hello open sesame world"},
	{name: "post-large", method: "POST", path: "/", body: strings.Repeat("ab", 4096)},
}

type diffGuest struct {
	path   string // relative to the reference module
	config []byte
	// statusOnly: the hosts render errors differently; compare the
	// status alone.
	statusOnly bool
}

func featureConfig(f handlerapi.Features) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, uint64(f))
	return b
}

var diffGuests = []diffGuest{
	{path: "examples/auth.wasm"},
	{path: "examples/config.wasm", config: featureConfig(handlerapi.FeatureBufferRequest | handlerapi.FeatureBufferResponse)},
	{path: "examples/log.wasm"},
	{path: "examples/redact.wasm", config: []byte("open sesame")},
	{path: "examples/router.wasm"},
	{path: "examples/wasi.wasm"},
	{path: "internal/test/testdata/e2e/protocol_version.wasm"},
	{path: "internal/test/testdata/e2e/method.wasm"},
	{path: "internal/test/testdata/e2e/uri.wasm"},
	{path: "internal/test/testdata/e2e/header_value.wasm"},
	{path: "internal/test/testdata/e2e/handle_response.wasm"},
	{path: "internal/test/testdata/e2e/header_names.wasm"},
	{path: "internal/test/testdata/error/panic_on_handle_request.wasm", statusOnly: true},
	{path: "internal/test/testdata/bench/log.wasm"},
	{path: "internal/test/testdata/bench/get_uri.wasm"},
	{path: "internal/test/testdata/bench/set_uri.wasm"},
	{path: "internal/test/testdata/bench/get_header_names.wasm"},
	{path: "internal/test/testdata/bench/get_header_values.wasm"},
	{path: "internal/test/testdata/bench/set_header_value.wasm"},
	{path: "internal/test/testdata/bench/add_header_value.wasm"},
	{path: "internal/test/testdata/bench/remove_header.wasm"},
	{path: "internal/test/testdata/bench/read_body.wasm"},
	{path: "internal/test/testdata/bench/read_body_stream.wasm"},
	{path: "internal/test/testdata/bench/write_body.wasm"},
	{path: "internal/test/testdata/bench/set_status_code.wasm"},
}

// knownDiffs are cases where the reference host is wrong; sluice's
// answer is checked against the expected one instead.
var knownDiffs = map[string]struct {
	why  string
	want string // a substring of sluice's snapshot
}{
	"examples/redact.wasm post-large": {
		why: "the reference buffers only the final read of the request body " +
			"(bufferingRequestBody.Read keeps p only when err != nil), so its next " +
			"handler sees a truncated body; sluice passes the whole body on",
		want: "next saw: " + strings.Repeat("ab", 4096),
	},
}

// ignoredHeaders differ between any two servers.
var ignoredHeaders = map[string]bool{"Date": true, "Content-Length": true, "Server": true, "Connection": true}

// snapshot is the comparable part of a response.
func snapshot(t *testing.T, client *http.Client, base string, dr diffRequest, statusOnly bool) string {
	t.Helper()
	req, err := http.NewRequest(dr.method, base+dr.path, strings.NewReader(dr.body))
	if err != nil {
		t.Fatal(err)
	}
	if dr.body == "" {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	for k, vs := range dr.header {
		req.Header[k] = vs
	}
	resp, err := client.Do(req)
	if err != nil {
		return "transport error"
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if statusOnly || resp.StatusCode >= 500 {
		// Each host renders its own error page (the reference puts the
		// wasm stack trace in it; sluice never shows it to clients).
		return fmt.Sprint(resp.StatusCode)
	}
	var lines []string
	for k, vs := range resp.Header {
		if ignoredHeaders[k] {
			continue
		}
		if k == "Content-Type" && (vs[0] == "text/plain; charset=utf-8" || vs[0] == "application/octet-stream") {
			continue // net/http sniffs a type when none was set; fasthttp doesn't
		}
		sorted := append([]string(nil), vs...)
		sort.Strings(sorted)
		lines = append(lines, k+": "+strings.Join(sorted, ", "))
	}
	sort.Strings(lines)
	return fmt.Sprintf("%d\n%s\n\n%s", resp.StatusCode, strings.Join(lines, "\n"), body)
}

// TestDifferential runs the guests the reference host ships through
// sluice's host and through the reference nethttp middleware, on the same
// requests and the same next handler, and compares status, headers and
// body.
func TestDifferential(t *testing.T) {
	dir := referenceDir(t)
	e := newEngine(t)
	ctx := context.Background()
	for _, g := range diffGuests {
		t.Run(strings.TrimSuffix(g.path, ".wasm"), func(t *testing.T) {
			bin, err := os.ReadFile(filepath.Join(dir, g.path))
			if err != nil {
				t.Fatal(err)
			}
			mw, err := wasm.NewMiddleware(ctx, bin, handler.GuestConfig(g.config))
			if err != nil {
				t.Fatal(err)
			}
			defer mw.Close(ctx)
			ref := httptest.NewServer(mw.NewHandler(ctx, echo))
			defer ref.Close()

			f := newFilter(t, e, filepath.Base(g.path), bin, runtime.FilterOptions{Config: g.config, PoolSize: 1})
			engines := exchangetest.Engines(t, filterHandler(f, echo))
			for _, dr := range diffRequests {
				want := snapshot(t, ref.Client(), ref.URL, dr, g.statusOnly)
				known, isKnown := knownDiffs[g.path+" "+dr.name]
				for _, eng := range engines[:2] { // HTTP/1.1, as the reference server
					have := snapshot(t, eng.Client, eng.URL, dr, g.statusOnly)
					if isKnown {
						if !strings.Contains(have, known.want) {
							t.Errorf("%s on %s: want %q in:\n%s", dr.name, eng.Name, known.want, have)
						}
						continue
					}
					if have != want {
						t.Errorf("%s on %s:\n--- reference\n%s\n--- sluice\n%s", dr.name, eng.Name, want, have)
					}
				}
			}
		})
	}
}
