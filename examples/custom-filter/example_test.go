package customfilter_test

import (
	"context"
	"fmt"
	"github.com/sluicehq/sluice/examples/internal/exampletest"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/filtertest"
)

var languages = []struct{ dir, prefix string }{
	{"go", "/go/"},
	{"c", "/c/"},
	{"assemblyscript", "/as/"},
	{"rust", "/rust/"},
}

// TestFilterEachLanguage runs each language's filter.wasm through the
// runtime alone: the four must behave the same.
func TestFilterEachLanguage(t *testing.T) {
	ctx := context.Background()
	e, err := runtime.NewEngine(ctx, runtime.EngineOptions{
		CacheDir: filepath.Join(os.TempDir(), "sluice-test-wasm-cache"),
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	for _, l := range languages {
		t.Run(l.dir, func(t *testing.T) {
			wasm, err := os.ReadFile(filepath.Join(l.dir, "filter.wasm"))
			if err != nil {
				t.Fatal(err)
			}
			f, err := filtertest.LoadOn(ctx, e, l.dir, wasm, runtime.FilterOptions{
				Config: []byte(`{"header": "X-Hello", "value": "world", "deny_prefix": "/private/"}`), PoolSize: 1,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			x := filtertest.NewExchange("GET", "/public/a?b=1")
			if res, err := f.Do(x, nil); err != nil || !res.Continued || x.Header("X-Hello") != "world" {
				t.Errorf("/public/a: continued %v X-Hello %q err %v", res.Continued, x.Header("X-Hello"), err)
			}
			x = filtertest.NewExchange("GET", "/private/a")
			if res, err := f.Do(x, nil); err != nil || res.Continued || x.Status() != 403 || x.RespBody.String() != "forbidden\n" {
				t.Errorf("/private/a: continued %v status %d body %q err %v", res.Continued, x.Status(), x.RespBody.String(), err)
			}
			if _, err := filtertest.LoadOn(ctx, e, l.dir, wasm, runtime.FilterOptions{Config: []byte(`{"header": ""}`), PoolSize: 1}); err == nil {
				t.Error("an empty header name loaded")
			}
		})
	}
}

// TestServe boots sluice.hcl with the server, in front of an upstream
// that echoes the header the filters add.
func TestServe(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "upstream saw %s X-Example=%q", r.URL.Path, r.Header.Get("X-Example"))
	}))
	defer up.Close()

	listen := exampletest.FreeAddr(t)
	exampletest.Boot(t, map[string]string{"http://127.0.0.1:9000": up.URL, "127.0.0.1:8080": listen})
	base := "http://" + listen
	get := func(p string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/"); code != 200 || body != "ok" {
		t.Errorf("/: %d %q", code, body)
	}
	for _, l := range languages {
		code, body := get(l.prefix + "hello")
		if want := fmt.Sprintf(`X-Example="from %s"`, l.dir); code != 200 || !strings.Contains(body, want) {
			t.Errorf("%s: %d %q, want 200 with %s", l.dir, code, body, want)
		}
		if code, body := get(l.prefix + "private/x"); code != 403 || body != "forbidden\n" {
			t.Errorf("%s private: %d %q, want 403 forbidden", l.dir, code, body)
		}
	}
}
