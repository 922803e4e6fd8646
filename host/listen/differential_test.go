package listen

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/generation"
	"github.com/valyala/fasthttp"
)

// differentialConfig has two sites on one listener, each with "/",
// "/api/" and "/papi/" (closed to the test's client by its allow list).
// Every route names its site and itself in X-Route.
const differentialConfig = `
listener "127.0.0.1:PORT" {
  max_request_body = "1KiB"
}
site "a.test" {
  listen = ["127.0.0.1:PORT"]
  route "/" {
    respond { headers = { "X-Route" = "a /" } }
  }
  route "/api/" {
    respond { headers = { "X-Route" = "a /api/" } }
  }
  route "/papi/" {
    allow = ["10.9.9.9"]
    respond { headers = { "X-Route" = "a /papi/" } }
  }
}
site "b.test" {
  listen  = ["127.0.0.1:PORT"]
  default = true
  route "/" {
    respond { headers = { "X-Route" = "b /" } }
  }
  route "/api/" {
    respond { headers = { "X-Route" = "b /api/" } }
  }
  route "/papi/" {
    allow = ["10.9.9.9"]
    respond { headers = { "X-Route" = "b /papi/" } }
  }
}
`

// engines are the two HTTP/1.1 engines in front of one generation's
// request path: fasthttp as production builds it (Listener.newFast: the
// shim, engineError, the same limits), and net/http as it serves HTTP/2
// in production (Listener.newStd), here speaking HTTP/1.1.
type engines struct {
	fast *fasthttp.Server
	std  *http.Server
}

func startEngines(t testing.TB) *engines {
	t.Helper()
	addr := "127.0.0.1:8080" // never bound: the engines serve in-memory connections
	cfg, diags := config.Parse("differential.hcl", []byte(strings.ReplaceAll(differentialConfig, "127.0.0.1:PORT", addr)))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	log := slog.New(slog.DiscardHandler)
	g, err := generation.Build(cfg, generation.Deps{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(log) })
	c := cfg.Listeners[0]
	l := &Listener{opts: Options{Address: addr, ReadTimeout: c.ReadTimeout, ReadHeaderTimeout: c.ReadHeaderTimeout,
		WriteTimeout: c.WriteTimeout, IdleTimeout: c.IdleTimeout, MaxHeaderBytes: c.MaxHeaderBytes,
		MaxRequestBody: c.MaxRequestBody, MaxConns: c.MaxConns}, log: log}
	h := exchange.HandlerFunc(func(x exchange.Exchange) error { return g.Serve(x, addr, "") })
	std := l.newStd(exchange.Std(h, l.renderError))
	var p http.Protocols
	p.SetHTTP1(true)
	std.Protocols = &p
	return &engines{fast: l.newFast(h), std: std}
}

// deadline bounds one request on one engine.
const deadline = 2 * time.Second

// serveFast runs req through fasthttp on an in-memory connection and
// returns what it wrote.
func (e *engines) serveFast(req []byte) ([]byte, bool) {
	c := newMemConn(req)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = e.fast.ServeConn(c)
	}()
	select {
	case <-done:
		return c.output(), true
	case <-time.After(deadline):
		return c.output(), false
	}
}

// serveStd runs req through net/http on an in-memory connection (a
// listener that accepts it once) and returns what it wrote.
func (e *engines) serveStd(req []byte) ([]byte, bool) {
	c := newMemConn(req)
	ln := &oneConnListener{c: c}
	go func() { _ = e.std.Serve(ln) }()
	select {
	case <-c.closed:
		return c.output(), true
	case <-time.After(deadline):
		return c.output(), false
	}
}

// memConn is a connection whose peer sent req and then closed its
// sending side: reads return req, then io.EOF. Writes are kept.
type memConn struct {
	r      *bytes.Reader
	mu     sync.Mutex
	out    bytes.Buffer
	closed chan struct{}
	once   sync.Once
}

func newMemConn(req []byte) *memConn {
	return &memConn{r: bytes.NewReader(req), closed: make(chan struct{})}
}

func (c *memConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.r.Read(b)
}

func (c *memConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	default:
	}
	return c.out.Write(b)
}

func (c *memConn) output() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.out.Bytes())
}

func (c *memConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.once.Do(func() { close(c.closed) })
	return nil
}

var (
	memLocal  = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	memRemote = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
)

func (c *memConn) LocalAddr() net.Addr              { return memLocal }
func (c *memConn) RemoteAddr() net.Addr             { return memRemote }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

// oneConnListener accepts c once; the next Accept waits for c to close
// and then reports the listener closed, so that Serve returns.
type oneConnListener struct {
	c     *memConn
	taken bool
	mu    sync.Mutex
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if !l.taken {
		l.taken = true
		l.mu.Unlock()
		return l.c, nil
	}
	l.mu.Unlock()
	<-l.c.closed
	return nil, net.ErrClosed
}
func (l *oneConnListener) Close() error   { return nil }
func (l *oneConnListener) Addr() net.Addr { return memLocal }

// outcomes reads the responses an engine wrote, in order, as "CLASS
// ROUTE": the status class ("2xx") and the route that served it
// (X-Route). ROUTE is "-" for an answer of sluice's without a route (its
// renderError sets X-Content-Type-Options) and "=" for one of the
// engine's own (a parse error). A response to HEAD has no body; it is
// told by the next response starting right after its head. "no
// response" when there is none; "timeout" when the engine did not finish
// within the deadline.
func outcomes(out []byte, finished bool) []string {
	var got []string
	br := bufio.NewReader(bytes.NewReader(out))
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			if len(got) == 0 && br.Buffered() == 0 && len(out) > 0 {
				got = append(got, "unparsable response")
			}
			break
		}
		route := resp.Header.Get("X-Route")
		if route == "" {
			route = "-"
			if resp.Header.Get("X-Content-Type-Options") == "" {
				route = "="
			}
		}
		got = append(got, fmt.Sprintf("%dxx %s", resp.StatusCode/100, route))
		if next, _ := br.Peek(7); string(next) != "HTTP/1." {
			_, _ = io.Copy(io.Discard, resp.Body)
		}
		resp.Body.Close()
	}
	if len(got) == 0 {
		got = append(got, "no response")
	}
	if !finished {
		got = append(got, "timeout")
	}
	return got
}

// FuzzEngines sends the same raw HTTP/1.1 bytes through fasthttp and
// net/http in front of the same dispatch, and checks that they agree on
// the site and route that served each request and on its status class.
func FuzzEngines(f *testing.F) {
	for _, s := range append(differentialSeeds, syntaxSeeds...) {
		f.Add([]byte(s))
	}
	e := startEngines(f)
	f.Fuzz(func(t *testing.T, req []byte) {
		fo, ffin := e.serveFast(req)
		so, sfin := e.serveStd(stdInput(req))
		fast, std := outcomes(fo, ffin), outcomes(so, sfin)
		std = normalize(req, fast, std)
		if c := collapseEmptyLines(req); strings.Join(fast, "; ") != strings.Join(std, "; ") && !bytes.Equal(c, req) {
			// Empty lines before a pipelined request line: RFC 9112
			// (section 2.2) says a server SHOULD ignore them, as fasthttp
			// and nginx do; net/http answers 400. Without them, the two
			// must agree.
			so, sfin = e.serveStd(stdInput(c))
			std = normalize(c, fast, outcomes(so, sfin))
		}
		if strings.Join(fast, "; ") != strings.Join(std, "; ") {
			t.Errorf("engines disagree on %q\nfasthttp: %q\nnet/http: %q\nfasthttp wrote: %q\nnet/http wrote: %q",
				req, fast, std, clip(fo), clip(so))
		}
	})
}

func clip(b []byte) []byte {
	if len(b) > 600 {
		return b[:600]
	}
	return b
}

// stdInput is req as net/http is to get it: without the empty lines
// before the first request line, which RFC 9112 (section 2.2) says a
// server SHOULD ignore, as fasthttp and nginx do, and net/http answers
// with 400.
func stdInput(req []byte) []byte {
	for {
		switch {
		case bytes.HasPrefix(req, []byte("\r\n")):
			req = req[2:]
		case bytes.HasPrefix(req, []byte("\n")):
			req = req[1:]
		default:
			return req
		}
	}
}

// collapseEmptyLines drops every line end that follows two others (an
// empty line after the end of a head), "\r\n" or a bare "\n" alike.
func collapseEmptyLines(req []byte) []byte {
	out := make([]byte, 0, len(req))
	run := 0 // line ends in a row so far
	for i := 0; i < len(req); {
		n := 0
		switch {
		case req[i] == '\n':
			n = 1
		case req[i] == '\r' && i+1 < len(req) && req[i+1] == '\n':
			n = 2
		}
		if n == 0 {
			run = 0
			out = append(out, req[i])
			i++
			continue
		}
		run++
		if run <= 2 {
			out = append(out, req[i:i+n]...)
		}
		i += n
	}
	return out
}

// normalize returns net/http's outcomes with the differences that are
// its own and harmless replaced by fasthttp's. Each is a request that
// fasthttp (production's HTTP/1.1 engine) refuses, rightly, and net/http
// (which serves HTTP/1.1 only in tests) serves or refuses otherwise
// (excused); the outcomes before it must agree, and after it fasthttp
// has closed the connection. Nothing is normalised where fasthttp
// serves: a 2xx on fasthttp always has to match, site and route.
//
// Two more are about the last request only, refused by both engines:
// input that ends inside a request's head gets a 400 from one engine and
// the connection closed by the other (both right: RFC 9112, section 8,
// an incomplete message); and a malformed request that one engine's
// parser refuses may get another error code from the other, whose checks
// run in another order.
func normalize(req []byte, fast, std []string) []string {
	n := max(len(fast), len(std))
	for i := range n {
		f, s := at(fast, i), at(std, i)
		if f == s {
			continue
		}
		if i == n-1 && cutShort(f) && cutShort(s) {
			return fast
		}
		if i == n-1 && refused(f) && refused(s) && (strings.HasSuffix(f, "=") || strings.HasSuffix(s, "=")) {
			// The last request, refused by both, by at least one in its
			// parser: the parsers check in different orders (net/http
			// the version before the Host, fasthttp line endings before
			// the version, ...), so the codes differ for the same
			// malformed input.
			return fast
		}
		if !refused(f) || !excused(req, f, s) {
			return std
		}
		return append(append([]string(nil), std[:i]...), fast[i:]...)
	}
	return std
}

// at is o[i], or "" past its end or where o is "no response".
func at(o []string, i int) string {
	if i >= len(o) || o[i] == "no response" {
		return ""
	}
	return o[i]
}

// cutShort reports whether an outcome is what an engine may answer to a
// request cut short: nothing, or a 400 no route answered.
func cutShort(o string) bool { return o == "" || o == "4xx -" || o == "4xx =" }

// refused reports whether an outcome is a refusal: a 4xx or 5xx that no
// route answered, or no answer at all.
func refused(o string) bool {
	return (o == "" || strings.HasPrefix(o, "4xx ") || strings.HasPrefix(o, "5xx ")) && !strings.HasSuffix(o, "/")
}

// excused reports whether net/http's outcome s for a request fasthttp
// refused (f) is one of the known, harmless differences in req.
func excused(req []byte, f, s string) bool {
	head := stdInput(req)
	if i := bytes.Index(head, []byte("\r\n\r\n")); i >= 0 {
		head = head[:i]
	}
	switch {
	case f == "5xx -" && refused(s) && !http1x(firstLine(head)):
		// A version other than HTTP/1.0 and 1.1 ("HTTP/1.2"): the front
		// door answers 505 (fasthttp's parser frames such a request as
		// HTTP/1.0, so serving it as 1.1 could frame it otherwise than a
		// proxy in front does); net/http refuses it with 400 first when
		// it also lacks a valid Host. Refused either way.
		return true
	case cutBody(stdInput(req)):
		// The input ends inside the first request's body: fasthttp
		// reads the start of a body before calling the handler, and
		// answers 400 to the end of input there (on a live connection it
		// would wait, and answer 408 in the end); net/http calls the
		// handler first, and "respond" does not read the body.
		return true
	case absoluteForm(firstLine(head)) && emptyField(head, "host"):
		// An absolute-form target beside an empty Host: fasthttp's
		// parser refuses it, as nginx does (an empty Host is invalid to
		// it); net/http ignores the Host for the target's authority
		// (RFC 9112, section 3.2.2), which the front door then uses on
		// either engine.
		return true
	case f == "4xx -" && absoluteForm(firstLine(head)) && hasField(head, "host") && !emptyField(head, "host"):
		// An absolute-form target beside a Host the front door finds
		// malformed ("%0"): net/http's parser takes a looser Host ('%'
		// and all), then drops it for the target's authority, so the
		// door never sees it; on fasthttp the door does, and refuses
		// (RFC 9112, section 3.2). In production net/http serves only
		// HTTP/2, which has no absolute-form.
		return true
	case s == "2xx =" && bytes.Contains(req, []byte("OPTIONS")):
		// "OPTIONS *": net/http answers it itself (200, its
		// globalOptionsHandler) without calling the handler; sluice,
		// like nginx, has no route for "*" (400).
		return true
	case f == "4xx =" && bareLF(stdInput(req)):
		// A bare LF ending a line of a head (of this request or, in a
		// pipeline, a later one): RFC 9112 (section 2.2) lets a server
		// take it as CRLF (net/http and nginx do) or refuse the request
		// (fasthttp's parser does, unless the head still ends in
		// CRLFCRLF).
		return true
	case hasField(head, "transfer-encoding") && (hasField(head, "content-length") || !bytes.Contains(firstLine(head), []byte("HTTP/1.1")) || s == "5xx ="):
		// Transfer-Encoding with Content-Length (refused against
		// smuggling, as nginx does; RFC 9112 section 6.3 allows it, and
		// net/http drops Content-Length instead), on HTTP/1.0 (faulty
		// framing by section 6.1; net/http takes it), or with a coding
		// other than chunked, which net/http answers with 501 and
		// fasthttp with 400, as section 6.3 requires where chunked is not
		// the final coding.
		return true
	}
	return false
}

// cutBody reports whether req ends inside the body of its first
// request: fewer bytes than its Content-Length, or a chunked body
// without its last chunk.
func cutBody(req []byte) bool {
	i := bytes.Index(req, []byte("\r\n\r\n"))
	if i < 0 {
		return false
	}
	head, body := req[:i+2], req[i+4:]
	for line := range bytes.SplitSeq(head, []byte("\n")) {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("content-length")):
			n, err := strconv.Atoi(string(value))
			if err == nil && len(body) < n {
				return true
			}
		case bytes.EqualFold(name, []byte("transfer-encoding")):
			if !bytes.Contains(body, []byte("0\r\n\r\n")) && !bytes.Contains(body, []byte("0\n\n")) {
				return true
			}
		}
	}
	return false
}

// absoluteForm reports whether a request line's target is absolute-form
// (the scheme is the front door's to judge).
func absoluteForm(line []byte) bool {
	_, rest, _ := bytes.Cut(line, []byte(" "))
	i := bytes.Index(rest, []byte("://"))
	return i > 0 && bytes.IndexByte(rest[:i], '/') < 0
}

// emptyField reports whether head has a field name with an empty value.
func emptyField(head []byte, name string) bool {
	for line := range bytes.SplitSeq(head, []byte("\n")) {
		n, v, ok := bytes.Cut(line, []byte(":"))
		if ok && bytes.EqualFold(n, []byte(name)) && len(bytes.TrimSpace(v)) == 0 {
			return true
		}
	}
	return false
}

// http1x reports whether a request line ends in HTTP/1.0 or HTTP/1.1.
func http1x(line []byte) bool {
	line = bytes.TrimSuffix(line, []byte("\r"))
	return bytes.HasSuffix(line, []byte(" HTTP/1.1")) || bytes.HasSuffix(line, []byte(" HTTP/1.0"))
}

func firstLine(head []byte) []byte {
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		return head[:i]
	}
	return head
}

// bareLF reports whether a line of b ends in LF alone.
func bareLF(b []byte) bool {
	for i, c := range b {
		if c == '\n' && (i == 0 || b[i-1] != '\r') {
			return true
		}
	}
	return false
}

// hasField reports whether a line of head starts with name and a colon,
// in any case.
func hasField(head []byte, name string) bool {
	for line := range bytes.SplitSeq(head, []byte("\n")) {
		if len(line) > len(name) && line[len(name)] == ':' && bytes.EqualFold(line[:len(name)], []byte(name)) {
			return true
		}
	}
	return false
}

var differentialSeeds = []string{
	"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /api/x HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /papi/x HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /api/x HTTP/1.1\r\nHost: b.test\r\n\r\n",
	"GET /api/x HTTP/1.1\r\nHost: c.test\r\n\r\n",
	"HEAD /api/x HTTP/1.1\r\nHost: a.test\r\n\r\nGET /papi/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /api/x HTTP/1.1\r\nHost: a.test\r\n\r\nGET /x HTTP/1.1\r\nHost: b.test\r\n\r\n",
	// absolute form
	"GET http://a.test/api/x HTTP/1.1\r\nHost: b.test\r\n\r\n",
	"GET http://a.test/api/x?q=1 HTTP/1.1\r\nHost: b.test\r\n\r\n",
	"GET http://a.test?q=/api/ HTTP/1.1\r\nHost: b.test\r\n\r\n",
	"GET http://a.test HTTP/1.1\r\nHost: b.test\r\n\r\n",
	"GET HTTP://A.TEST:80/api/ HTTP/1.1\r\nHost: b.test\r\n\r\n",
	"GET https://a.test/api/ HTTP/1.1\r\n\r\n",
	"GET http://u@a.test/api/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET ftp://a.test/api/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET http://a.test/api/#x HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET http://a.test/api/ HTTP/1.1\r\nHost: \"\r\n\r\n",
	"GET http://a.test/api/ HTTP/1.1\r\nHost:\r\n\r\n",
	"GET * HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"OPTIONS * HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n",
	"CONNECT /api/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"CONNECT  HTTP/1.0\r\n\r\n",
	// Host variants
	"GET /api/ HTTP/1.1\r\nHost: a.test:8080\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nHost: A.TEST\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nHost: a.test.\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nHost: a.test:\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nHost: a.test:99999999\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nHost: [::1\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nHost: \r\n\r\n",
	"GET /api/ HTTP/1.1\r\n\r\n",
	"GET /api/ HTTP/1.0\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nHost: a.test\r\nHost: a.test\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nHost: a.test, b.test\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nHost: a.test b.test\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nHost : a.test\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nHost:a.test\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nhOsT: a.test\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nHost: a.test\x00\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nHost: a.test/x\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nHost: a.test@b.test\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nHost: a%2etest\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nHost: %61.test\r\n\r\n",
	// dot segments and escapes
	"GET /api/../papi/x HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /api/%2e%2e/papi/x HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /api/..%2fpapi/x HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /api/..%5cpapi/x HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /api/%c0%af../papi/x HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /api/%zz HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /api/x#/../../papi/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /api/a%00b HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /api/a\x00b HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /%61pi/x HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET //api/x HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /api/x?q=/../papi HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET api/x HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /api/x y HTTP/1.1\r\nHost: a.test\r\n\r\n",
	// versions
	"GET /api/ HTTP/1.0\r\nHost: a.test\r\n\r\n",
	"GET /api/ HTTP/9.9\r\nHost: a.test\r\n\r\n",
	"GET /api/ HTTP/2.0\r\nHost: a.test\r\n\r\n",
	"GET /api/ HTTP/1.10\r\nHost: a.test\r\n\r\n",
	"GET /api/ HTTP/1.2\r\nHost: a.test\r\n\r\n",
	"GET /api/ http/1.1\r\nHost: a.test\r\n\r\n",
	"GET /api/\r\n\r\n",
	"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	// bodies and framing
	"POST /api/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\n\r\nhello",
	"POST /api/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\n\r\nhelloGET /papi/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"POST /api/ HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	"POST /api/ HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\nGET /papi/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"POST /api/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
	"POST /api/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: +5\r\n\r\nhello",
	"POST /api/ HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
	"POST /api/ HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: identity\r\n\r\n",
	"POST /api/ HTTP/1.0\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"POST /api/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 2000\r\n\r\nx",
	"POST /api/ HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n5;ext\r\nhello\r\n0\r\nTrailer: x\r\n\r\n",
	"POST /api/ HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
	// obs-fold, bare LF, odd header lines
	"GET /api/ HTTP/1.1\r\nHost: a.test\r\nX-A: 1\r\n  folded\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nHost:\r\n a.test\r\n\r\n",
	"GET /api/ HTTP/1.1\nHost: a.test\n\n",
	"GET /api/ HTTP/1.1\r\nHost: a.test\nX: y\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nHost: a.test\rX: y\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nX y: z\r\nHost: a.test\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nHost: a.test\r\nX-A: 1\r\n x y: z\r\n\r\n",
	"GET /api/ HTTP/1.1\r\n: z\r\nHost: a.test\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nNoColon\r\nHost: a.test\r\n\r\n",
	" GET /api/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"\r\nGET /api/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET  /api/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"G\x00T /api/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"get /api/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\nGET /papi/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /api/ HTTP/1.1\r\nHost: a.test\r\n",
	"",
	// The :method of issue 21, finding 1, as the proxy wrote it: on
	// HTTP/1.1 it is a request of its own, for /papi/ (403 from both).
	"GET /papi/secret.txt HTTP/1.1\r\nHost: a.test\r\nX-Junk: /api/x HTTP/1.1\r\nHost: a.test\r\n\r\n",
	// Connection options name the client's own fields only.
	"GET /api/ HTTP/1.1\r\nHost: a.test\r\nConnection: X-Forwarded-For, Forwarded, X-Client-Subject\r\nX-Forwarded-For: 10.9.9.9\r\n\r\n",
	"GET /papi/ HTTP/1.1\r\nHost: a.test\r\nConnection: Host\r\n\r\n",
}

// syntaxSeeds are issue 21, finding 1, as HTTP/1.1 bytes, and the rest
// of the front door's syntax rules (host/frontdoor): each is refused by
// both engines, the first request of each never served.
var syntaxSeeds = []string{
	// The :path that carried a second request, its SP and CR LF in the
	// request line as the proxy wrote them.
	"GET /api/a?q HTTP/1.1\r\nHost: 127.0.0.1 HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /api/a?q\rHTTP/1.1 HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /api/x?a=\x00b HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /api/x?a=\x01 HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /api/x?a=\x7f HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /api/x?a=\tb HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /api/\x1bx HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GE(T /api/x HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"G\x01T /api/x HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /api/x HTTP/1.1\r\nHost: a.test\r\nX(a): 1\r\n\r\n",
	"GET /api/x HTTP/1.1\r\nHost: a.test\r\nX\x01a: 1\r\n\r\n",
	"GET /api/x HTTP/1.1\r\nHost: a.test\r\nX-A: a\x00b\r\n\r\n",
	"GET /api/x HTTP/1.1\r\nHost: a.test\r\nX-A: a\x01b\r\n\r\n",
	"GET /api/x HTTP/1.1\r\nHost: a.test\r\nX-A: a\x7fb\r\n\r\n",
}

// TestEnginesRefuseSyntax: both engines refuse every syntax seed (a 4xx
// no route answered, or no answer): nothing of it is served.
func TestEnginesRefuseSyntax(t *testing.T) {
	e := startEngines(t)
	for _, req := range syntaxSeeds {
		fo, ffin := e.serveFast([]byte(req))
		so, sfin := e.serveStd([]byte(req))
		for name, o := range map[string][]string{"fasthttp": outcomes(fo, ffin), "net/http": outcomes(so, sfin)} {
			if first := at(o, 0); !refused(first) || strings.HasPrefix(first, "5xx") {
				t.Errorf("%s: %q: %q, want a 4xx or no answer", name, req, o)
			}
		}
	}
}
