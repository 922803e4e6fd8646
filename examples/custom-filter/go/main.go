// Command filter is the custom-filter example in Go: it adds a header from
// its config to every request, tags every response it lets through, and
// answers 403 to paths under a prefix (and logs it).
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o filter.wasm .
package main

import (
	"errors"
	"strings"

	sluice "github.com/sluicehq/sluice/sdk/go"
)

// config is the filter block's `config = {...}`.
type config struct {
	Header     string `json:"header"`      // request header to add; default "X-Example"
	Value      string `json:"value"`       // its value
	DenyPrefix string `json:"deny_prefix"` // paths answered 403; "" denies nothing
}

var cfg config

func setup() error {
	cfg = config{Header: "X-Example"}
	if err := sluice.Config(&cfg); err != nil {
		return err
	}
	if cfg.Header == "" {
		return errors.New("header must be a non-empty string")
	}
	return nil
}

func handle(req sluice.Request, resp sluice.Response) bool {
	if cfg.DenyPrefix != "" && strings.HasPrefix(req.Path(), cfg.DenyPrefix) {
		resp.SetStatus(403)
		resp.Header().Set("Content-Type", "text/plain; charset=utf-8")
		resp.Body().WriteString("forbidden\n")
		sluice.LogKV(sluice.LevelInfo, "denied", "path", req.Path(), "agent", req.Header().Get("User-Agent"))
		return false
	}
	req.Header().Set(cfg.Header, cfg.Value)
	// ?debug=… reaches the upstream decoded, as X-Debug; a malformed
	// escape (?debug=%zz) is no error.
	if v, ok := req.Query("debug"); ok {
		req.Header().Set("X-Debug", v)
	}
	// Set before continuing: the client gets it with the upstream's
	// response (sdk/ABI.md, "Response headers set before the next handler").
	resp.Header().Set("X-Filtered-By", "custom-filter")
	return true
}

func init() {
	sluice.Setup(setup)
	sluice.Handle(handle)
}

func main() {}
