package listen

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/sluicehq/sluice/host/exchange"
)

// errorPage is an error that comes with a page of its own for its
// status: a site's custom error page (host/generation's pageError). It is
// rendered like every other error; only the body differs.
type errorPage interface {
	ErrorPage() (contentType string, body []byte)
}

// failedFields describe the body of the response a handler gave up on
// (its coding, its validators, its range): none of them is true of the
// error's body.
var failedFields = [...]string{"Content-Encoding", "Content-Range", "Content-Language", "Content-Location",
	"Content-Disposition", "ETag", "Last-Modified"}

// renderError is the one place that turns a handler's error into a
// response, for every engine of the listener: the status it carries and
// a short plain-text body, or the site's page for it. Causes go to the
// log, never to the client.
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
	contentType, body := "text/plain; charset=utf-8", []byte(nil)
	var page errorPage
	if errors.As(err, &page) {
		contentType, body = page.ErrorPage()
	} else {
		if msg == "" {
			msg = http.StatusText(status)
		}
		if msg == "" {
			msg = fmt.Sprintf("status %d", status)
		}
		body = []byte(msg + "\n")
	}
	x.ResetBody()
	x.SetStatus(status)
	for _, f := range failedFields {
		x.DelResponseHeader(f)
	}
	x.SetResponseHeader("Content-Type", contentType)
	x.SetResponseHeader("X-Content-Type-Options", "nosniff")
	x.SetBody(body)
}
