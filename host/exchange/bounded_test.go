package exchange_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/exchange/exchangetest"
)

// TestBufferBodyLimit: a file, stream or reader body is buffered when it
// fits the limit and dropped, unread past limit+1 bytes, when it doesn't;
// every engine gives the request body a read deadline.
func TestBufferBodyLimit(t *testing.T) {
	const limit = 100
	dir := t.TempDir()
	for _, n := range []int{limit, limit + 1} {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(n)), []byte(strings.Repeat("f", n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var read int64 // bytes taken from the last reader body
	h := exchange.HandlerFunc(func(x exchange.Exchange) error {
		if err := exchange.SetReadDeadline(x, time.Now().Add(time.Second)); err != nil {
			return exchange.Errorf(500, "SetReadDeadline: %v", err)
		}
		var n int
		var kind string
		fmt.Sscanf(strings.TrimPrefix(string(x.Path()), "/"), "%d/%s", &n, &kind)
		switch kind {
		case "file":
			f, err := os.Open(filepath.Join(dir, fmt.Sprint(n)))
			if err != nil {
				return err
			}
			x.SendFile(f, 0, int64(n))
		case "stream":
			x.Stream(-1, func(w exchange.StreamWriter) error {
				for range n {
					if _, err := w.Write([]byte("s")); err != nil {
						return err
					}
				}
				return nil
			})
		case "reader", "sized":
			size := int64(-1)
			if kind == "sized" {
				size = int64(n)
			}
			read = 0
			x.SendReader(&counted{r: strings.NewReader(strings.Repeat("r", n)), n: &read}, size)
		}
		fits, err := x.BufferBodyLimit(limit, time.Now().Add(time.Second))
		if err != nil {
			return err
		}
		if kind == "reader" && read > limit+1 {
			return exchange.Errorf(500, "read %d bytes of the body, limit %d", read, limit)
		}
		if kind == "sized" && !fits && read != 0 {
			return exchange.Errorf(500, "read %d bytes of a body known to be over the limit", read)
		}
		if !fits {
			x.SetStatus(502)
			x.SetBody([]byte("over"))
			return nil
		}
		x.SetBody(append([]byte("buffered:"), x.ResponseBody()...))
		return nil
	})
	for _, e := range exchangetest.Engines(t, h) {
		for _, kind := range []string{"file", "stream", "reader", "sized"} {
			for _, n := range []int{limit, limit + 1, 10 * limit} {
				if kind == "file" && n == 10*limit {
					continue
				}
				t.Run(fmt.Sprintf("%s/%s/%d", e.Name, kind, n), func(t *testing.T) {
					resp, err := e.Client.Get(fmt.Sprintf("%s/%d/%s", e.URL, n, kind))
					if err != nil {
						t.Fatal(err)
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					want, wantBody := http.StatusOK, "buffered:"+strings.Repeat(kind[:1], n)
					if kind == "sized" {
						wantBody = "buffered:" + strings.Repeat("r", n)
					}
					if n > limit {
						want, wantBody = 502, "over"
					}
					if resp.StatusCode != want || string(b) != wantBody {
						t.Errorf("%d %.60q, want %d %.60q", resp.StatusCode, b, want, wantBody)
					}
				})
			}
		}
	}
}

type counted struct {
	r io.Reader
	n *int64
}

func (c *counted) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}
