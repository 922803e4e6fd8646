package host

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestChunkedBodyLimit: a chunked request body that outgrows
// max_request_body is cut off with 413 and never fully reaches the
// upstream; a small one passes.
func TestChunkedBodyLimit(t *testing.T) {
	var got []int
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, len(b))
		fmt.Fprintf(w, "%d", len(b))
	}))
	defer backend.Close()
	base := startConfig(t, `
listener "127.0.0.1:PORT" {
  max_request_body = "1KiB"
}
site "a.test" {
  listen = ["127.0.0.1:PORT"]
  route "/" {
    proxy {
      upstreams = ["`+backend.URL+`"]
    }
  }
}
`).URL
	post := func(n int) int {
		// An io.Reader of unknown length makes the client send chunks.
		req, _ := http.NewRequest("POST", base+"/", io.MultiReader(strings.NewReader(strings.Repeat("x", n))))
		req.ContentLength = -1
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := post(100); s != 200 {
		t.Fatalf("small chunked body: %d", s)
	}
	if s := post(64 << 10); s != 413 {
		t.Fatalf("large chunked body: %d, want 413", s)
	}
	for _, n := range got {
		if n > 1024 {
			t.Fatalf("upstream received %d bytes past the limit", n)
		}
	}
}
