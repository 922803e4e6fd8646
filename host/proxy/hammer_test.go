package proxy_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange/exchangetest"
	"github.com/sluicehq/sluice/host/proxy"
)

// TestHammer_MixedTraffic runs many concurrent requests of every shape
// (small, large, chunked, POST bodies, HEAD) through each engine and checks
// every byte, to catch pooled state leaking between requests.
func TestHammer_MixedTraffic(t *testing.T) {
	be := backend(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		id := r.Header.Get("X-Id")
		w.Header().Set("X-Id", id)
		if r.Method == "POST" {
			b, _ := io.ReadAll(r.Body)
			sum := sha256.Sum256(b)
			io.WriteString(w, id+":"+hex.EncodeToString(sum[:]))
			return
		}
		body := bytes.Repeat([]byte(id[:1]), n)
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", strconv.Itoa(n))
		}
		w.Write(body)
	})
	other := backend(t, be.Config.Handler.ServeHTTP)
	p := newProxy(t, proxy.Options{Upstreams: []proxy.Upstream{{URL: be.URL}, {URL: other.URL}}, Balance: "least_conn"})
	engines(t, p, func(t *testing.T, e exchangetest.Engine) {
		const workers, each = 8, 25
		deadline := time.Now().Add(15 * time.Second)
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < each && time.Now().Before(deadline); i++ {
					id := fmt.Sprintf("%c%d-%d", 'a'+rune((w+i)%26), w, i)
					n := []int{0, 10, 5000, 70000, 300000}[(w+i)%5]
					var req *http.Request
					var want string
					switch i % 4 {
					case 0, 1:
						q := fmt.Sprintf("/?n=%d", n)
						if i%4 == 1 {
							q += "&chunked=1"
						}
						req, _ = http.NewRequest("GET", e.URL+q, nil)
						want = strings.Repeat(id[:1], n)
					case 2:
						body := strings.Repeat(id, n/len(id)+1)
						sum := sha256.Sum256([]byte(body))
						req, _ = http.NewRequest("POST", e.URL+"/", strings.NewReader(body))
						want = id + ":" + hex.EncodeToString(sum[:])
					case 3:
						req, _ = http.NewRequest("HEAD", e.URL+fmt.Sprintf("/?n=%d", n), nil)
					}
					req.Header.Set("X-Id", id)
					resp, err := e.Client.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					got, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil || resp.StatusCode != 200 || string(got) != want || resp.Header.Get("X-Id") != id {
						t.Errorf("%s %s: %d, %d bytes (want %d), X-Id %q, err %v", req.Method, req.URL, resp.StatusCode, len(got), len(want), resp.Header.Get("X-Id"), err)
						return
					}
					if req.Method == "HEAD" && resp.ContentLength != int64(n) {
						t.Errorf("HEAD n=%d: Content-Length %d", n, resp.ContentLength)
					}
				}
			}(w)
		}
		wg.Wait()
	})
	for _, s := range p.Stats() {
		if s.InFlight != 0 || s.Failures != 0 {
			t.Errorf("after the hammer: %+v", s)
		}
	}
}
