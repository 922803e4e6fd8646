package listen

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/host/exchange"
	"github.com/valyala/fasthttp"
)

// newFast configures fasthttp for the HTTP/1.1 connections of this
// listener, with the listener's limits: h behind the exchange adapter
// and the fasthttp shim (fastHandler, engineError).
func (l *Listener) newFast(h exchange.Handler) *fasthttp.Server {
	o := l.opts
	readTimeout, headerReceived := fastTimeouts(o)
	return &fasthttp.Server{
		Handler:                      l.fastHandler(exchange.Fast(h, l.renderError, o.TLS)),
		ErrorHandler:                 l.engineError,
		NoDefaultServerHeader:        true, // the front door sets server_header, the same on every engine
		NoDefaultContentType:         true,
		DisablePreParseMultipartForm: true,
		ReadTimeout:                  readTimeout,
		HeaderReceived:               headerReceived,
		WriteTimeout:                 o.WriteTimeout,
		IdleTimeout:                  o.IdleTimeout,
		ReadBufferSize:               int(o.MaxHeaderBytes),
		WriteBufferSize:              exchange.FastWriteBufferSize,
		MaxRequestBodySize:           int(o.MaxRequestBody),
		Concurrency:                  o.MaxConns,
		CloseOnShutdown:              true,
		TCPKeepalive:                 true,
		SecureErrorLogMessage:        true,
		Logger:                       fastLogger{l.log},
		StreamRequestBody:            true,
	}
}

// fastTimeouts maps the listener's timeouts onto fasthttp, which has one
// ReadTimeout for the request head and body together: it becomes
// read_header_timeout, so that a client trickling its head is cut off
// then (and cannot fill max_conns), and once the head is in,
// HeaderReceived gives the body the rest of read_timeout.
func fastTimeouts(o Options) (time.Duration, func(*fasthttp.RequestHeader) fasthttp.RequestConfig) {
	head, whole := o.ReadHeaderTimeout, o.ReadTimeout
	if head <= 0 || (whole > 0 && head >= whole) {
		return whole, nil
	}
	body := whole
	if body <= 0 {
		body = 100 * 365 * 24 * time.Hour // read_timeout "0s": no limit
	}
	return head, func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
		return fasthttp.RequestConfig{ReadTimeout: body}
	}
}

// fastHandler is the fasthttp shim in front of the exchange adapter:
// what is about fasthttp's parser and connections, not about policy
// (that is the front door's, behind Deps.Handler, for every engine). It refuses
// with 400 what fasthttp's parser lets through and RFC 9112 does not
// (fields): a field name with a space in it, Transfer-Encoding
// "identity", and a chunked request that also declares Content-Length.
// An error answer that closes the connection closes it lingering, so
// that a client still sending its body reads the status instead of a
// reset.
func (l *Listener) fastHandler(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		h := &ctx.Request.Header
		if err := fields(h.RawHeaders(), h.ContentLength() == -1); err != nil {
			l.engineError(ctx, err)
			return
		}
		if l.h2 != nil && l.base == nil && h2cUpgrade(h) && !l.draining.Load() {
			l.upgradeH2C(ctx)
			return
		}
		next(ctx)
		if l.draining.Load() && ctx.Response.StatusCode() != fasthttp.StatusSwitchingProtocols {
			// The last response of the connection says so (Shutdown), and
			// the close lingers: a client that sent its next request
			// already must read this response, not a reset.
			ctx.SetConnectionClose()
			linger(ctx.Conn())
		}
		if l.opts.TCPNoPush && !l.opts.TLS {
			exchange.CorkFast(ctx)
		}
		if ctx.Response.StatusCode() >= 400 && ctx.Response.ConnectionClose() {
			linger(ctx.Conn())
		}
	}
}

// engineError answers requests the engine could not parse: malformed
// framing is a 400 (a transfer coding other than chunked too: RFC 9112,
// section 6.3, requires it where chunked is not the final coding, and
// allows it for the rest), an oversized header a 431, an oversized body a
// 413.
func (l *Listener) engineError(ctx *fasthttp.RequestCtx, err error) {
	if l.opts.H2C && failedPreface(err) {
		// On an h2c listener, a first line that is neither the HTTP/2
		// preface nor an HTTP/1.x request line is a failed preface
		// (RFC 9113, 3.4): the connection closes unanswered.
		_ = ctx.Conn().Close()
		return
	}
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
	linger(ctx.Conn())
}

// failedPreface reports whether fasthttp refused a request line for a
// version field with no "HTTP/" in it at all ("INVALID CONNECTION
// PREFACE", as h2spec sends): that is no HTTP/1.x client, and on an h2c
// listener an HTTP/2 one that got its preface wrong. A version that is
// HTTP/1.x's gone wrong ("HTTP/1.10", "http/1.1", a trailing space, a
// target with a space in it) is a malformed request, and a 400.
func failedPreface(err error) bool {
	const unsupported = "unsupported http version "
	_, rest, ok := strings.Cut(err.Error(), unsupported)
	if !ok {
		return false
	}
	q, qerr := strconv.QuotedPrefix(rest)
	if qerr != nil {
		return false
	}
	proto, qerr := strconv.Unquote(q)
	if qerr != nil {
		return false
	}
	return !strings.Contains(strings.ToUpper(proto), "HTTP/")
}

// linger makes c's eventual close a lingering one (lazyconn.Conn.Linger),
// looking through the TLS, sniffing and limiting wrappers.
func linger(c net.Conn) {
	for range 8 {
		if l, ok := c.(interface{ Linger() }); ok {
			l.Linger()
			return
		}
		w, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return
		}
		c = w.NetConn()
	}
}

var (
	errConflictingFraming = errors.New("both Transfer-Encoding and Content-Length")
	errFieldName          = errors.New("space in a field name")
	errTransferCoding     = errors.New("transfer coding other than chunked")
)

// fields checks the request's header lines as sent (raw) for what
// fasthttp's parser tolerates:
//
//   - a field name with a space inside ("X y: z"): a field name is a
//     token (RFC 9110, section 5.1), and an upstream could read the line
//     otherwise;
//   - Transfer-Encoding "identity", the one coding besides chunked that
//     fasthttp takes (as no coding at all, framing the body by
//     Content-Length): RFC 9112 has no such coding, and a request whose
//     final coding is not chunked is a 400 (section 6.3);
//   - on a chunked request, Content-Length: RFC 9112 lets a server ignore
//     it then, but a proxy in front may have framed the request by it, so
//     refusing both is the safe answer to request smuggling.
//
// One pass over the lines, a memchr or two each.
func fields(raw []byte, chunked bool) error {
	const cl, te = "content-length", "transfer-encoding"
	for len(raw) > 0 {
		i := bytes.IndexByte(raw, '\n')
		line := raw
		if i >= 0 {
			line, raw = raw[:i+1], raw[i+1:]
		} else {
			raw = nil
		}
		if line[0] == ' ' || line[0] == '\t' { // obs-fold continuation
			continue
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			continue
		}
		name := line[:colon]
		if bytes.IndexByte(name, ' ') >= 0 {
			return errFieldName
		}
		switch {
		case chunked && len(name) == len(cl) && bytes.EqualFold(name, []byte(cl)):
			return errConflictingFraming
		case !chunked && len(name) == len(te) && bytes.EqualFold(name, []byte(te)):
			return errTransferCoding
		}
	}
	return nil
}

type fastLogger struct{ log *slog.Logger }

func (f fastLogger) Printf(format string, args ...any) {
	f.log.Debug(strings.TrimSpace(fmt.Sprintf(format, args...)), "engine", "fasthttp")
}
