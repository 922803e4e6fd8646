package observe

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/host/exchange"
)

// What the access log learns of a request besides its head: its request
// id, its consumer, its upstream, its trace id without tracing, and the
// size of the page rendered for its error.

const (
	// requestIDHeader carries the request id, to the upstream and from
	// a trusted proxy.
	requestIDHeader = "X-Request-Id"
	// consumerHeader is the identity an auth filter sets, the one a rate
	// limit keyed by "consumer" reads (host/gateway's default
	// ConsumerHeader).
	consumerHeader = "X-Consumer"
	// maxRequestID bounds a request id taken from a trusted proxy.
	maxRequestID = 128
)

// ensureRequestID makes x carry an X-Request-Id, which the proxy passes
// upstream with the other request headers: the one a trusted proxy sent
// (exchange.PeerTrusted: the peer is one of the listener's
// trusted_proxies, as the front door decided), else a new one of 32 hex
// digits (as nginx's $request_id), which replaces any the client sent.
func ensureRequestID(x exchange.Exchange) {
	if exchange.PeerTrusted(x) && validRequestID(x.RequestHeader(requestIDHeader)) {
		return
	}
	var id [32]byte
	var r [16]byte
	binary.BigEndian.PutUint64(r[:8], rand.Uint64())
	binary.BigEndian.PutUint64(r[8:], rand.Uint64())
	for i, c := range r {
		id[2*i], id[2*i+1] = hexDigits[c>>4], hexDigits[c&15]
	}
	x.SetRequestHeader(requestIDHeader, string(id[:]))
}

// validRequestID reports whether id is 1 to maxRequestID visible ASCII
// characters; a trusted proxy's other ids are replaced.
func validRequestID(id []byte) bool {
	if len(id) == 0 || len(id) > maxRequestID {
		return false
	}
	for _, c := range id {
		if c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// traceparentID returns the trace id of a W3C traceparent value
// ("00-<32 hex>-<16 hex>-<2 hex>", or longer for a later version), zero
// when it is not one. It does not allocate.
func traceparentID(tp []byte) trace.TraceID {
	var tid trace.TraceID
	if len(tp) < 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-' ||
		(len(tp) > 55 && (tp[0] == '0' && tp[1] == '0' || tp[55] != '-')) ||
		tp[0] == 'f' && tp[1] == 'f' {
		return trace.TraceID{}
	}
	for _, c := range [...]byte{tp[0], tp[1], tp[53], tp[54]} {
		if unhex(c) < 0 {
			return trace.TraceID{}
		}
	}
	for i := range tid {
		hi, lo := unhex(tp[3+2*i]), unhex(tp[4+2*i])
		if hi < 0 || lo < 0 {
			return trace.TraceID{}
		}
		tid[i] = byte(hi<<4 | lo)
	}
	parent := byte(0)
	for _, c := range tp[36:52] {
		if unhex(c) < 0 {
			return trace.TraceID{}
		}
		parent |= c - '0'
	}
	if parent == 0 { // all zeros: an invalid parent id
		return trace.TraceID{}
	}
	if !tid.IsValid() {
		return trace.TraceID{}
	}
	return tid
}

// unhex is the value of a lower-case hex digit (W3C Trace Context allows
// no other), or -1.
func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	}
	return -1
}

// errorBodySize is the length of the body host/listen's renderError
// writes for err: the site's page, the error's message, or the status
// text, and a newline. The two must agree; TestAccessLogBytes in host
// compares what is logged with what a client receives.
func errorBodySize(err error, status int) int64 {
	var page interface {
		ErrorPage() (contentType string, body []byte)
	}
	if errors.As(err, &page) {
		_, body := page.ErrorPage()
		return int64(len(body))
	}
	msg := ""
	var e *exchange.Error
	if errors.As(err, &e) {
		msg = e.Message
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	if msg == "" {
		return int64(len("status ")+len(strconv.Itoa(status))) + 1
	}
	return int64(len(msg)) + 1
}

// tries is the context the proxy's tries are reported through to the
// access log (Upstream.Tried): the request's context with the last try.
type tries struct {
	context.Context
	mu     sync.Mutex // a try may end after the line was written (a streamed body)
	addr   string
	status int
	d      time.Duration
}

type triesKey struct{}

func (t *tries) Value(k any) any {
	if k == (triesKey{}) {
		return t
	}
	return t.Context.Value(k)
}

func (t *tries) last() (string, int, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.addr, t.status, t.d
}

// Tried reports one try of x's request on u to the access log, for its
// upstream_addr, upstream_status and upstream_duration fields: status
// and d as for Request. The proxy calls it beside Request, with the
// exchange of the try; without those fields it does nothing.
func (u *Upstream) Tried(x exchange.Exchange, status int, d time.Duration) {
	if u == nil {
		return
	}
	t, _ := x.Context().Value(triesKey{}).(*tries)
	if t == nil {
		return
	}
	t.mu.Lock()
	t.addr, t.status, t.d = u.addr, status, d
	t.mu.Unlock()
}

// upstreamAddr is the host:port of an upstream URL.
func upstreamAddr(url string) string {
	if i := strings.Index(url, "://"); i >= 0 {
		return url[i+3:]
	}
	return url
}
