package exchange

import (
	"bufio"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// FuzzFastRequestHeader: for every header block fasthttp accepts, the
// fields cut from its raw bytes agree with fasthttp's parsed ones (its
// special fields aside), so that only a real edit sends a request down
// the reconcile path.
func FuzzFastRequestHeader(f *testing.F) {
	for _, s := range []string{
		"Host: a\r\nCookie: a=1; c=\"q\\\"x\"; d=v\\w\r\nUser-Agent:\r\n\r\n",
		"Host: a\r\nX-A: 1\r\nx-a: 2\r\nContent-Type: \r\nConnection: close\r\n\r\n",
		"Host: a\r\nX-Fold: a\r\n  b\r\n\tc\r\nX-B:  \t v \t\r\n\r\n",
		"Host: a\nX-Bare-LF: 1\n\n",
		"Host: a\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\nTE: trailers\r\n\r\n",
		"Host: a\r\nX-Obs: \xe2\x82\xac\r\nConnection: keep-alive, close\r\n\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, block string) {
		var req fasthttp.Request
		if err := req.Header.Read(bufio.NewReader(strings.NewReader("GET / HTTP/1.1\r\n" + block))); err != nil {
			return
		}
		ctx := new(fasthttp.RequestCtx)
		ctx.Init(&req, nil, nil)
		raw := ctx.Request.Header.RawHeaders()
		if len(raw) == 0 {
			return
		}
		x := &fastExchange{ctx: ctx}
		x.fieldsFromRaw(raw)
		if !x.fieldsMatch() {
			var got []string
			for _, f := range x.hdr.fields {
				got = append(got, string(f.k)+"="+string(f.v))
			}
			t.Fatalf("fields %q disagree with fasthttp's for %q", got, block)
		}
	})
}
