package h2_test

import (
	"io"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/h2"
	"golang.org/x/net/http2"
)

// TestDataFlood: DATA frames that cost the client nothing, empty ones
// without END_STREAM and ones on a closed stream (each answered with
// RST_STREAM), have a budget as PINGs have: past it the connection ends
// with GOAWAY ENHANCE_YOUR_CALM (issue 21, finding 10: 20 M empty frames
// were taken, 11.67 M resets sent). Under the budget the connection goes
// on.
func TestDataFlood(t *testing.T) {
	reader := exchange.HandlerFunc(func(x exchange.Exchange) error {
		_, err := io.Copy(io.Discard, x.RequestBody())
		x.SetBody([]byte("ok"))
		return err
	})
	for _, tc := range []struct {
		kind  string
		n     int
		flood bool
	}{{"empty", 100, true}, {"closed", 100, true}, {"empty", 40, false}, {"closed", 40, false}} {
		name := tc.kind + "/flood"
		if !tc.flood {
			name = tc.kind + "/within"
		}
		t.Run(name, func(t *testing.T) {
			_, addr := start(t, h2.Options{Handler: reader, MaxControl: 50})
			cl := dial(t, addr)
			if tc.kind == "closed" {
				cl.request(1, "GET", "/", true)
				if s := status(cl, 1); s != "200" {
					t.Fatalf("status %s", s)
				}
			} else {
				cl.request(1, "POST", "/", false)
			}
			go func() {
				for range tc.n {
					if cl.fr.WriteData(1, false, nil) != nil {
						return
					}
				}
				cl.fr.WritePing(false, [8]byte{1})
			}()
			if tc.flood {
				if code := cl.goAway(); code != http2.ErrCodeEnhanceYourCalm {
					t.Fatalf("GOAWAY %v, want ENHANCE_YOUR_CALM", code)
				}
				return
			}
			cl.c.SetReadDeadline(time.Now().Add(5 * time.Second))
			cl.until("PING ack", func(f http2.Frame) bool {
				if g, ok := f.(*http2.GoAwayFrame); ok {
					t.Fatalf("GOAWAY %v under the budget", g.ErrCode)
				}
				p, ok := f.(*http2.PingFrame)
				return ok && p.IsAck()
			})
		})
	}
}
