package listen

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/sluicehq/sluice/host/exchange"
)

// renderError is the one place that turns a handler's error into a
// response, for every engine of the listener: the status it carries and
// a short plain-text body. Causes go to the log, never to the client.
func (l *Listener) renderError(x exchange.Exchange, err error) {
	status := exchange.StatusOf(err)
	switch status {
	case http.StatusBadRequest, http.StatusRequestTimeout, http.StatusRequestEntityTooLarge,
		http.StatusRequestHeaderFieldsTooLarge, http.StatusHTTPVersionNotSupported:
		// The request may still be arriving, unread: end the connection
		// after this answer (lingering, on HTTP/1.1), as nginx does.
		exchange.CloseConnection(x)
	}
	msg := ""
	var e *exchange.Error
	if errors.As(err, &e) {
		msg = e.Message
		if e.Err != nil && status >= 500 {
			l.log.Warn("request failed", "method", string(x.Method()), "path", string(x.Path()), "status", status, "error", e.Err)
		}
	} else {
		l.log.Error("request failed", "method", string(x.Method()), "path", string(x.Path()), "error", err)
	}
	if msg == "" {
		msg = http.StatusText(status)
		if msg == "" {
			msg = fmt.Sprintf("status %d", status)
		}
	}
	x.ResetBody()
	x.SetStatus(status)
	x.DelResponseHeader("Content-Encoding")
	x.DelResponseHeader("ETag")
	x.DelResponseHeader("Last-Modified")
	x.SetResponseHeader("Content-Type", "text/plain; charset=utf-8")
	x.SetResponseHeader("X-Content-Type-Options", "nosniff")
	x.SetBody([]byte(msg + "\n"))
}
