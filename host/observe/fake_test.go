package observe

import (
	"context"
	"crypto/tls"
	"net"
	"strings"

	"github.com/sluicehq/sluice/host/exchange"
)

// fakeExchange is the part of an Exchange that Wrap reads; it embeds the
// interface so that new methods don't break the tests (and panic if
// called).
type fakeExchange struct {
	exchange.Exchange
	ctx     context.Context
	method  []byte
	path    []byte
	uri     []byte
	host    []byte
	reqHdr  map[string][]byte
	status  int
	body    []byte
	respHdr map[string][]byte
	remote  net.Addr
	trusted bool                 // PeerTrusted
	tls     *tls.ConnectionState // TLSConnectionState
}

func newFake(method, uri string) *fakeExchange {
	path := uri
	if i := strings.IndexByte(uri, '?'); i >= 0 {
		path = uri[:i]
	}
	return &fakeExchange{
		ctx:     context.Background(),
		method:  []byte(method),
		path:    []byte(path),
		uri:     []byte(uri),
		host:    []byte("example.com"),
		reqHdr:  map[string][]byte{"user-agent": []byte("bench/1.0")},
		respHdr: map[string][]byte{},
		status:  200,
		remote:  &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 40000},
	}
}

func (x *fakeExchange) reset() {
	x.status, x.body, x.ctx = 200, nil, context.Background()
}

func (x *fakeExchange) Context() context.Context     { return x.ctx }
func (x *fakeExchange) SetContext(c context.Context) { x.ctx = c }
func (x *fakeExchange) Method() []byte               { return x.method }
func (x *fakeExchange) Path() []byte                 { return x.path }
func (x *fakeExchange) Query() []byte {
	if i := strings.IndexByte(string(x.uri), '?'); i >= 0 {
		return x.uri[i+1:]
	}
	return nil
}
func (x *fakeExchange) RequestURI() []byte                { return x.uri }
func (x *fakeExchange) Host() []byte                      { return x.host }
func (x *fakeExchange) Proto() string                     { return "HTTP/1.1" }
func (x *fakeExchange) IsTLS() bool                       { return false }
func (x *fakeExchange) RemoteAddr() net.Addr              { return x.remote }
func (x *fakeExchange) RequestHeader(name string) []byte  { return lookup(x.reqHdr, name) }
func (x *fakeExchange) ContentLength() int64              { return 0 }
func (x *fakeExchange) Status() int                       { return x.status }
func (x *fakeExchange) SetStatus(c int)                   { x.status = c }
func (x *fakeExchange) ResponseHeader(name string) []byte { return lookup(x.respHdr, name) }

// lookup finds a header without allocating (the benchmarks count).
func lookup(h map[string][]byte, name string) []byte {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return nil
}
func (x *fakeExchange) SetResponseHeader(name, value string) {
	x.respHdr[strings.ToLower(name)] = []byte(value)
}
func (x *fakeExchange) SetRequestHeader(name, value string) {
	x.reqHdr[strings.ToLower(name)] = []byte(value)
}
func (x *fakeExchange) PeerTrusted() bool                        { return x.trusted }
func (x *fakeExchange) TLSConnectionState() *tls.ConnectionState { return x.tls }
func (x *fakeExchange) SetBody(b []byte)                         { x.body = b }
func (x *fakeExchange) ResponseBody() []byte                     { return x.body }
