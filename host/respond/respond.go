package respond

import (
	"net/http"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/exchange"
)

func init() {
	config.RegisterHandler("respond", func() config.Block { return Defaults() })
}

// Options are the `respond {}` block (see config.Block for the tags).
type Options struct {
	// Status is the status code, 200-599.
	Status int `hcl:"status,min=200,max=599" doc:"200-599"`
	// Body is the response body.
	Body string `hcl:"body"`
	// Headers are set on the response; without a Content-Type, a
	// non-empty body is sent as text/plain; charset=utf-8.
	Headers map[string]string `hcl:"headers,headers"`
}

// Defaults returns a respond block's defaults: 200, no body, no headers.
func Defaults() *Options { return &Options{Status: http.StatusOK, Headers: map[string]string{}} }

// Handler answers every request with a fixed response.
type Handler struct {
	status int
	body   []byte
	hdrs   [][2]string
}

// New builds the handler of o. It has no side effects.
func New(o *Options) *Handler {
	h := &Handler{status: o.Status, body: []byte(o.Body)}
	if h.status == 0 {
		h.status = Defaults().Status
	}
	for k, v := range o.Headers {
		h.hdrs = append(h.hdrs, [2]string{k, v})
	}
	if o.Headers["Content-Type"] == "" && o.Headers["content-type"] == "" && len(h.body) > 0 {
		h.hdrs = append(h.hdrs, [2]string{"Content-Type", "text/plain; charset=utf-8"})
	}
	return h
}

// ServeExchange answers x.
func (h *Handler) ServeExchange(x exchange.Exchange) error {
	x.SetStatus(h.status)
	for _, kv := range h.hdrs {
		x.SetResponseHeader(kv[0], kv[1])
	}
	x.SetBody(h.body)
	return nil
}
