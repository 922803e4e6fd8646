package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/valyala/fasthttp"
)

// ListenerOptions are the settings of one listening address. Zero values
// take the documented defaults of config.Listener.
type ListenerOptions struct {
	Address           string
	ReadTimeout       time.Duration
	ReadHeaderTimeout time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int64
	MaxRequestBody    int64
	MaxConns          int
}

// listener is one listening socket and the engines behind it. It
// outlives generations: the engines ask the server for the current
// generation on every request.
type listener struct {
	opts ListenerOptions
	ln   net.Listener
	fast *fasthttp.Server
	std  *http.Server // HTTP/2 (with TLS) and h2c; nil until needed
	done chan struct{}
	log  *slog.Logger
}

// addrOf returns the network address to bind for a configured address:
// ":8080" binds every interface, "localhost:8080" loopback.
func addrOf(a string) string { return a }

func (s *Server) openListener(o ListenerOptions) (*listener, error) {
	ln, err := net.Listen("tcp", addrOf(o.Address))
	if err != nil {
		return nil, fmt.Errorf("listener %q: %w", o.Address, err)
	}
	l := &listener{opts: o, ln: ln, done: make(chan struct{}), log: s.log}
	h := s.dispatch(o.Address)
	fast := exchange.Fast(h, s.renderError, false)
	l.fast = &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			switch cl := ctx.Request.Header.ContentLength(); {
			case cl == -1 && smuggled(ctx.Request.Header.RawHeaders()):
				l.engineError(ctx, errConflictingFraming)
				return
			case o.MaxRequestBody > 0 && int64(cl) > o.MaxRequestBody:
				// With StreamRequestBody the engine's own limit only
				// decides when to stream, so the declared size is checked
				// here, and a chunked body is cut off while it is read.
				l.engineError(ctx, fasthttp.ErrBodyTooLarge)
				return
			case cl == -1 && o.MaxRequestBody > 0:
				if body := ctx.RequestBodyStream(); body != nil {
					ctx.Request.SetBodyStream(&limitedBody{r: body, n: o.MaxRequestBody}, -1)
				}
			}
			fast(ctx)
		},
		ErrorHandler:                 l.engineError,
		Name:                         "sluice",
		NoDefaultContentType:         true,
		DisablePreParseMultipartForm: true,
		ReadTimeout:                  o.ReadTimeout,
		WriteTimeout:                 o.WriteTimeout,
		IdleTimeout:                  o.IdleTimeout,
		ReadBufferSize:               int(o.MaxHeaderBytes),
		MaxRequestBodySize:           int(o.MaxRequestBody),
		Concurrency:                  o.MaxConns,
		CloseOnShutdown:              true,
		TCPKeepalive:                 true,
		SecureErrorLogMessage:        true,
		Logger:                       fastLogger{s.log},
		StreamRequestBody:            true,
	}
	go func() {
		defer close(l.done)
		if err := l.fast.Serve(ln); err != nil && !errors.Is(err, net.ErrClosed) {
			s.log.Error("listener stopped", "address", o.Address, "error", err)
		}
	}()
	s.log.Info("listening", "address", ln.Addr().String())
	return l, nil
}

// engineError answers requests the engine could not parse: malformed
// framing is a 400, an oversized header a 431, an oversized body a 413.
func (l *listener) engineError(ctx *fasthttp.RequestCtx, err error) {
	status, msg := fasthttp.StatusBadRequest, "bad request"
	var small *fasthttp.ErrSmallBuffer
	switch {
	case errors.As(err, &small):
		status, msg = fasthttp.StatusRequestHeaderFieldsTooLarge, "request header fields too large"
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		status, msg = fasthttp.StatusRequestEntityTooLarge, "request body too large"
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			status, msg = fasthttp.StatusRequestTimeout, "request timeout"
		}
	}
	ctx.Response.Reset()
	ctx.SetConnectionClose()
	ctx.SetStatusCode(status)
	ctx.SetContentType("text/plain; charset=utf-8")
	ctx.SetBodyString(msg + "\n")
}

// shutdown stops accepting, lets in-flight requests finish, and closes
// idle keep-alive connections; it gives up when ctx ends.
func (l *listener) shutdown(ctx context.Context) error {
	var errs []error
	if l.std != nil {
		errs = append(errs, l.std.Shutdown(ctx))
	}
	errs = append(errs, l.fast.ShutdownWithContext(ctx))
	select {
	case <-l.done:
	case <-ctx.Done():
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

// limitedBody fails a streamed request body that outgrows the listener's
// max_request_body.
type limitedBody struct {
	r io.Reader
	n int64
}

// ErrBodyTooLarge is returned by a request body reader when the body
// exceeds the listener's max_request_body; handlers answer 413.
var ErrBodyTooLarge = &exchange.Error{Status: fasthttp.StatusRequestEntityTooLarge, Message: "request body too large"}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.n < 0 {
		return 0, ErrBodyTooLarge
	}
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if l.n < 0 {
		return n, ErrBodyTooLarge
	}
	return n, err
}

var errConflictingFraming = errors.New("both Transfer-Encoding and Content-Length")

// smuggled reports whether a chunked request also carried Content-Length.
// RFC 9112 lets a server ignore Content-Length then, but a proxy in front
// may have framed the request by it: refusing both is the safe answer to
// request smuggling. Only chunked requests pay for this scan.
func smuggled(raw []byte) bool {
	const name = "content-length:"
	for len(raw) > 0 {
		i := bytes.IndexByte(raw, '\n')
		line := raw
		if i >= 0 {
			line, raw = raw[:i+1], raw[i+1:]
		} else {
			raw = nil
		}
		if len(line) >= len(name) && bytes.EqualFold(line[:len(name)], []byte(name)) {
			return true
		}
	}
	return false
}

type fastLogger struct{ log *slog.Logger }

func (f fastLogger) Printf(format string, args ...any) {
	f.log.Debug(strings.TrimSpace(fmt.Sprintf(format, args...)), "engine", "fasthttp")
}

// Addr returns the bound address of a configured listener, or nil.
func (s *Server) Addr(configured string) net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.listeners[configured]; ok {
		return l.ln.Addr()
	}
	return nil
}
