// Command waf is the waf filter: a web application firewall built on
// Coraza v3 with the OWASP Core Rule Set embedded. It inspects each
// request (URI, headers and, bounded, the body) and optionally the
// response, logs every matched rule through the ABI's log, one line per
// match, and in block mode answers a request the rules refuse with 403.
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"

	"github.com/corazawaf/coraza-coreruleset/v4"
	"github.com/corazawaf/coraza/v3"
	"github.com/corazawaf/coraza/v3/types"
	sluice "github.com/sluicehq/sluice/sdk/go"
)

// config is the filter block's `config`.
type config struct {
	// Mode is "block" (refused requests get 403) or "detect" (matches
	// are only logged). Default "block".
	Mode string `json:"mode"`
	// Paranoia is the CRS paranoia level, 1 to 4. Default 1.
	Paranoia int `json:"paranoia"`
	// CRS includes the embedded Core Rule Set. Default true.
	CRS *bool `json:"crs"`
	// Setup are SecLang lines placed before the CRS rules (after its
	// crs-setup.conf.example): SecActions that set the CRS's tx
	// variables, rules that must run first in their phase.
	Setup []string `json:"setup"`
	// Directives are SecLang lines added after the CRS: exclusions,
	// rules of one's own.
	Directives []string `json:"directives"`
	// RequestBodyLimit is how many bytes of a request body are inspected
	// (the rest passes uninspected). 0 turns request body inspection
	// off. Default 131072. Keep it at most the filter's max_buffer.
	RequestBodyLimit *int `json:"request_body_limit"`
	// ResponseBodyLimit is how many bytes of a response body are
	// inspected. 0 (the default) leaves responses uninspected.
	ResponseBodyLimit int `json:"response_body_limit"`
}

const (
	defaultRequestBodyLimit = 128 << 10
	maxBodyLimit            = 1 << 30
)

var (
	waf     coraza.WAF
	block   bool
	reqMax  int
	respMax int
	chunk   []byte // read buffer, reused: an instance runs one call at a time
)

// bodyRules are coraza.conf-recommended's: JSON and XML request bodies
// are parsed (urlencoded and multipart ones always are), and a body that
// does not parse is refused, so that it cannot slip past uninspected.
const bodyRules = `SecRule REQUEST_HEADERS:Content-Type "^(?:application(?:/soap\+|/)|text/)xml" "id:200000,phase:1,t:none,t:lowercase,pass,nolog,ctl:requestBodyProcessor=XML"
SecRule REQUEST_HEADERS:Content-Type "^application/json" "id:200001,phase:1,t:none,t:lowercase,pass,nolog,ctl:requestBodyProcessor=JSON"
SecRule REQUEST_HEADERS:Content-Type "^application/[a-z0-9.-]+[+]json" "id:200006,phase:1,t:none,t:lowercase,pass,nolog,ctl:requestBodyProcessor=JSON"
SecRequestBodyJsonDepthLimit 1024
SecRule REQBODY_ERROR "!@eq 0" "id:200002,phase:2,t:none,log,deny,status:400,msg:'Failed to parse request body.',logdata:'%{reqbody_error_msg}',severity:2"
SecRule MULTIPART_STRICT_ERROR "!@eq 0" "id:200003,phase:2,t:none,log,deny,status:400,msg:'Multipart request body failed strict validation.'"
`

// crsSetup is the part of the CRS set-up this filter decides; the rest
// is @crs-setup.conf.example as shipped. That file gives phases 1 and 2
// a default action that logs; phases 3 and 4 (the response) and 5 (the
// CRS's anomaly score report, 980170) get the same here, or their
// matches would go unlogged.
const crsSetup = `SecAction "id:900000,phase:1,pass,t:none,nolog,setvar:tx.blocking_paranoia_level=%d"
SecAction "id:900001,phase:1,pass,t:none,nolog,setvar:tx.detection_paranoia_level=%d"
Include @crs-setup.conf.example
SecDefaultAction "phase:3,log,auditlog,pass"
SecDefaultAction "phase:4,log,auditlog,pass"
SecDefaultAction "phase:5,log,auditlog,pass"
`

func init() {
	sluice.Setup(setup)
	sluice.Handle(handle)
	sluice.HandleResponse(handleResponse)
}

func setup() error {
	var c config
	if err := sluice.Config(&c); err != nil {
		return err
	}
	d, err := directives(&c)
	if err != nil {
		return err
	}
	block = c.Mode != "detect"
	reqMax = defaultRequestBodyLimit
	if c.RequestBodyLimit != nil {
		reqMax = *c.RequestBodyLimit
	}
	respMax = c.ResponseBodyLimit
	if reqMax < 0 || reqMax > maxBodyLimit || respMax < 0 || respMax > maxBodyLimit {
		return fmt.Errorf("config: body limits are 0 to %d bytes", maxBodyLimit)
	}
	wc := coraza.NewWAFConfig().
		WithRootFS(coreruleset.FS).
		WithErrorCallback(logMatch).
		WithDirectives(d)
	if reqMax > 0 {
		wc = wc.WithRequestBodyAccess().WithRequestBodyLimit(reqMax).WithRequestBodyInMemoryLimit(reqMax)
	}
	if respMax > 0 {
		wc = wc.WithResponseBodyAccess().WithResponseBodyLimit(respMax)
		sluice.EnableFeatures(sluice.BufferResponse)
	}
	if reqMax > 0 {
		sluice.EnableFeatures(sluice.BufferRequest)
	}
	w, err := coraza.NewWAF(wc)
	if err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	waf = w
	chunk = make([]byte, 16<<10)
	tuneGC()
	return nil
}

// The guest collects its garbage itself, between requests: after a
// request, once the requests since the last collection allocated
// gcEvery bytes, it runs a whole collection at once (runtime.GC). The Go
// runtime's own collector is concurrent: in Wasm, with one thread, a
// cycle over the rule set's heap (tens of MiB) stretched over seconds of
// requests, all of them paying for write barriers and for marking what
// they allocated, and it left that garbage live until the next cycle.
// The runtime's collector stays as a backstop, for a request that
// allocates far more than usual: at gcHeadroom past the live heap, and
// at gcSoftLimit in all (debug.SetMemoryLimit); both fit the default
// memory of 256 MiB.
const (
	gcEvery     = 64 << 20
	gcHeadroom  = 128 << 20
	gcSoftLimit = 192 << 20
)

// allocs reads the bytes allocated so far.
var allocs = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}

// allocated is allocs at the end of the last collection.
var allocated uint64

// tuneGC runs once the rules are parsed, at the end of the start-up that
// the host snapshots: it collects the parse's garbage, so that every
// instance made from the snapshot starts with a clean heap and no cycle
// half done, and sets the backstop.
func tuneGC() {
	collect()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	pct := 100
	if live := ms.HeapAlloc; live > 0 {
		pct = int(min(max(uint64(gcHeadroom)*100/live, 100), 1000))
	}
	debug.SetGCPercent(pct)
	debug.SetMemoryLimit(gcSoftLimit)
}

// collect runs a whole collection.
func collect() {
	runtime.GC()
	metrics.Read(allocs)
	allocated = allocs[0].Value.Uint64()
}

// collectIfDue collects once gcEvery bytes were allocated since the last
// collection; it runs at the end of a request.
func collectIfDue() {
	metrics.Read(allocs)
	if allocs[0].Value.Uint64()-allocated >= gcEvery {
		collect()
	}
}

// directives assembles the SecLang the WAF is built from.
func directives(c *config) (string, error) {
	switch c.Mode {
	case "", "block", "detect":
	default:
		return "", fmt.Errorf("config: mode %q: want \"block\" or \"detect\"", c.Mode)
	}
	p := c.Paranoia
	if p == 0 {
		p = 1
	}
	if p < 1 || p > 4 {
		return "", fmt.Errorf("config: paranoia %d: want 1 to 4", c.Paranoia)
	}
	var b strings.Builder
	b.WriteString("SecRuleEngine ")
	if c.Mode == "detect" {
		b.WriteString("DetectionOnly\n")
	} else {
		b.WriteString("On\n")
	}
	// Bodies over the limit are inspected up to it; the rest passes.
	b.WriteString("SecRequestBodyLimitAction ProcessPartial\nSecResponseBodyLimitAction ProcessPartial\n")
	b.WriteString("SecResponseBodyMimeType text/plain text/html text/xml application/json\n")
	b.WriteString(bodyRules)
	crs := c.CRS == nil || *c.CRS
	if crs {
		fmt.Fprintf(&b, crsSetup, p, p)
	}
	for _, d := range c.Setup {
		b.WriteString(d)
		b.WriteByte('\n')
	}
	if crs {
		b.WriteString("Include @owasp_crs/*.conf\n")
	}
	for _, d := range c.Directives {
		b.WriteString(d)
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// logMatch logs one matched rule: its id first, then Coraza's
// ModSecurity-style line (message, data, URI, unique id).
func logMatch(r types.MatchedRule) {
	lvl := sluice.LevelWarn
	if !sluice.LogEnabled(lvl) {
		return
	}
	sluice.Log(lvl, "waf: rule "+strconv.Itoa(r.Rule().ID())+" matched: "+r.ErrorLog())
}

func handle(req sluice.Request, resp sluice.Response) bool {
	tx := waf.NewTransaction()
	if tx.IsRuleEngineOff() {
		tx.Close()
		collectIfDue()
		return true
	}
	if it := inspectRequest(tx, req); it != nil {
		finish(tx)
		return deny(resp, it)
	}
	if respMax == 0 {
		finish(tx)
		return true
	}
	req.Set("tx", tx)
	return true
}

func inspectRequest(tx types.Transaction, req sluice.Request) *types.Interruption {
	addr := req.SourceAddr()
	host, port := splitHostPort(addr)
	tx.ProcessConnection(host, port, "", 0)
	tx.ProcessURI(req.URI(), req.Method(), req.Protocol())
	h := req.Header()
	for _, name := range h.Names() {
		for _, v := range h.Values(name) {
			tx.AddRequestHeader(name, v)
		}
		if name == "host" {
			tx.SetServerName(h.Get(name))
		}
	}
	if it := tx.ProcessRequestHeaders(); it != nil {
		return it
	}
	if reqMax > 0 && tx.IsRequestBodyAccessible() {
		if it := feed(req.Body(), reqMax, tx.WriteRequestBody); it != nil {
			return it
		}
	}
	it, err := tx.ProcessRequestBody()
	if err != nil {
		sluice.Log(sluice.LevelError, "waf: request body: "+err.Error())
	}
	return it
}

// feed reads at most max bytes of body into write, stopping early at an
// interruption or at the body's end.
func feed(body sluice.Body, max int, write func([]byte) (*types.Interruption, int, error)) *types.Interruption {
	for left := max; left > 0; {
		p := chunk
		if len(p) > left {
			p = p[:left]
		}
		n, err := body.Read(p)
		if n > 0 {
			left -= n
			it, _, werr := write(p[:n])
			if it != nil {
				return it
			}
			if werr != nil {
				sluice.Log(sluice.LevelError, "waf: body: "+werr.Error())
				return nil
			}
		}
		if err != nil {
			return nil
		}
	}
	return nil
}

func handleResponse(req sluice.Request, resp sluice.Response, isError bool) {
	tx, _ := req.Value("tx").(types.Transaction)
	if tx == nil {
		return
	}
	defer finish(tx)
	if isError {
		return
	}
	h := resp.Header()
	for _, name := range h.Names() {
		for _, v := range h.Values(name) {
			tx.AddResponseHeader(name, v)
		}
	}
	it := tx.ProcessResponseHeaders(resp.Status(), req.Protocol())
	if it == nil && tx.IsResponseBodyAccessible() && tx.IsResponseBodyProcessable() {
		if it = feed(resp.Body(), respMax, tx.WriteResponseBody); it == nil {
			var err error
			if it, err = tx.ProcessResponseBody(); err != nil {
				sluice.Log(sluice.LevelError, "waf: response body: "+err.Error())
			}
		}
	}
	if it != nil {
		for _, name := range h.Names() {
			h.Remove(name)
		}
		deny(resp, it)
	}
}

// deny answers with the interruption's status (403 unless a rule set
// another); it reports false: the request does not go on.
func deny(resp sluice.Response, it *types.Interruption) bool {
	code := it.Status
	if code < 400 || code > 599 {
		code = 403
	}
	resp.SetStatus(code)
	resp.Header().Set("Content-Type", "text/plain; charset=utf-8")
	resp.Body().WriteString("Forbidden\n")
	return false
}

func finish(tx types.Transaction) {
	tx.ProcessLogging()
	if err := tx.Close(); err != nil && !errors.Is(err, fs.ErrClosed) {
		sluice.Log(sluice.LevelError, "waf: close: "+err.Error())
	}
	collectIfDue()
}

func splitHostPort(addr string) (string, int) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return addr, 0
	}
	port, _ := strconv.Atoi(addr[i+1:])
	return strings.Trim(addr[:i], "[]"), port
}

func main() {}
