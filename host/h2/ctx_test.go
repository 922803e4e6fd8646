package h2_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/h2"
	"golang.org/x/net/http2"
)

// TestContextOutlivesStream: a context a handler took from its stream
// (context.WithCancel's goroutine, say) can be asked Done and Err after
// the stream ended and other streams ran; it reads as cancelled. A
// pooled stream reused under it crashed the process (nil connection).
func TestContextOutlivesStream(t *testing.T) {
	ctxs := make(chan context.Context, 1)
	_, addr := start(t, h2.Options{Handler: exchange.HandlerFunc(func(x exchange.Exchange) error {
		select {
		case ctxs <- x.Context():
		default:
		}
		x.SetBody([]byte("ok"))
		return nil
	})})
	cl := dial(t, addr)
	for id := uint32(1); id <= 41; id += 2 {
		cl.request(id, "GET", "/", true)
		cl.until("DATA", func(f http2.Frame) bool {
			d, ok := f.(*http2.DataFrame)
			return ok && d.StreamID == id && d.StreamEnded()
		})
	}
	ctx := <-ctxs
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the context of an ended stream is not done")
	}
	if ctx.Err() == nil {
		t.Fatal("the context of an ended stream has no error")
	}
}
