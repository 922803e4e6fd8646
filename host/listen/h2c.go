package listen

import (
	"bytes"
	"io"
	"net"

	"github.com/sluicehq/sluice/host/h2"
	"github.com/valyala/fasthttp"
)

// h2cUpgrade reports whether a request asks to switch to h2c (RFC 7540,
// 3.2; RFC 9113 deprecates it, but some clients still send it): Upgrade
// names h2c, HTTP2-Settings is there, and no body comes with it (a
// request with a body is served over HTTP/1.1, which the RFC allows).
func h2cUpgrade(h *fasthttp.RequestHeader) bool {
	if n := h.ContentLength(); n != 0 && n != -2 {
		return false
	}
	return h.Peek("HTTP2-Settings") != nil && hasToken(h.Peek("Upgrade"), "h2c") &&
		hasToken(h.Peek("Connection"), "upgrade")
}

// upgradeH2C answers 101 and hands the connection to host/h2, the
// request becoming its stream 1 (an h2c listener on the sluice engine).
func (l *Listener) upgradeH2C(ctx *fasthttp.RequestCtx) {
	h := &ctx.Request.Header
	conn := h.Peek("Connection")
	u := &h2.Upgrade{Method: string(h.Method()), RequestURI: string(h.RequestURI()), Host: string(h.Host()),
		Settings: string(h.Peek("HTTP2-Settings"))}
	if _, ok := h2.DecodeSettings(u.Settings); !ok {
		ctx.SetConnectionClose()
		ctx.SetStatusCode(fasthttp.StatusBadRequest)
		ctx.SetBodyString("bad request: malformed HTTP2-Settings\n")
		return
	}
	for k, v := range h.All() {
		switch {
		case hopField(k), hasToken(conn, string(k)):
			continue
		}
		u.Fields = append(u.Fields, string(k), string(v))
	}
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		if _, err := io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"); err != nil {
			return
		}
		l.h2.ServeUpgrade(c, nil, u)
	})
}

// hopField reports the fields of an h2c upgrade request that do not
// carry over to HTTP/2.
func hopField(k []byte) bool {
	for _, n := range [...]string{"Connection", "Upgrade", "HTTP2-Settings", "Host", "Keep-Alive",
		"Proxy-Connection", "Transfer-Encoding", "TE", "Content-Length"} {
		if bytes.EqualFold(k, []byte(n)) {
			return true
		}
	}
	return false
}

// hasToken reports whether a comma-separated field value lists tok
// (case-insensitive).
func hasToken(v []byte, tok string) bool {
	for len(v) > 0 {
		i := bytes.IndexByte(v, ',')
		item := v
		if i >= 0 {
			item, v = v[:i], v[i+1:]
		} else {
			v = nil
		}
		if bytes.EqualFold(bytes.TrimSpace(item), []byte(tok)) {
			return true
		}
	}
	return false
}
