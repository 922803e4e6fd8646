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
	// RequestBodyLimit is how many bytes of a request body are inspected.
	// A body over it is refused with 413 in block mode (see
	// RequestBodyLimitAction). 0 turns request body inspection off.
	// Default 131072. Keep it at most the filter's max_buffer.
	RequestBodyLimit *int `json:"request_body_limit"`
	// RequestBodyLimitAction is what happens to a request body over
	// RequestBodyLimit in block mode: "reject" (the default, 413) or
	// "process_partial" (its first RequestBodyLimit bytes are inspected,
	// the rest passes uninspected). In detect mode a body over the limit
	// is inspected in part and the fact logged.
	RequestBodyLimitAction string `json:"request_body_limit_action"`
	// InspectLimit bounds the rules' work per request: the most bytes of
	// arguments (query, form, multipart and JSON fields, names included)
	// and of a body that is not multipart that the rules inspect. The
	// rules cost the guest about 0.1 ms per byte, so that one request
	// cannot cost seconds. Over it, a request is refused with 413 in block
	// mode before the CRS runs; in detect mode it is logged and the CRS's
	// rules are skipped for it. 0 means no bound. Default 8192.
	InspectLimit *int `json:"inspect_limit"`
	// ResponseBodyLimit is how many bytes of a response body are
	// inspected. 0 (the default) leaves responses uninspected.
	ResponseBodyLimit int `json:"response_body_limit"`
}

const (
	defaultRequestBodyLimit = 128 << 10
	defaultInspectLimit     = 8 << 10
	maxBodyLimit            = 1 << 30
)

var (
	waf     coraza.WAF
	block   bool
	reject  bool // a request body over reqMax is refused (413)
	reqMax  int
	inspMax int // inspect_limit; 0: none
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

// inspectRules bound the rules' work on one request (inspect_limit): the
// CRS costs the guest about 0.1 ms of CPU per byte of arguments or body
// it inspects, linear in the size (a 10 KB form field about 1 s, 130 KB
// about 13 s), so a request over the bound is refused before the CRS's
// rules run (in detect mode they are skipped for it). Phase 1 sees the
// query's arguments, phase 2 the body's too (form, multipart and JSON
// fields). A body that is not multipart is inspected whole (REQUEST_BODY,
// XML): inspectRequest bounds its length itself, as Coraza sets
// REQUEST_BODY_LENGTH for only some formats; a multipart body is
// inspected by its fields (its files are not).
const inspectRules = `SecRule ARGS_COMBINED_SIZE "@gt %d" "id:200010,phase:1,t:none,log,%s,msg:'Arguments over the inspect_limit of the waf filter',logdata:'%%{ARGS_COMBINED_SIZE} bytes'"
SecRule ARGS_COMBINED_SIZE "@gt %d" "id:200011,phase:2,t:none,log,%s,msg:'Arguments over the inspect_limit of the waf filter',logdata:'%%{ARGS_COMBINED_SIZE} bytes'"
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
	reject = block && c.RequestBodyLimitAction != "process_partial"
	reqMax = defaultRequestBodyLimit
	if c.RequestBodyLimit != nil {
		reqMax = *c.RequestBodyLimit
	}
	respMax = c.ResponseBodyLimit
	inspMax = inspectLimit(&c)
	if reqMax < 0 || reqMax > maxBodyLimit || respMax < 0 || respMax > maxBodyLimit {
		return fmt.Errorf("config: body limits are 0 to %d bytes", maxBodyLimit)
	}
	wc := coraza.NewWAFConfig().
		WithRootFS(coreruleset.FS).
		WithErrorCallback(logMatch).
		WithDirectives(d)
	if reqMax > 0 {
		// Coraza refuses a body that reaches its limit: one byte more
		// lets a body of exactly request_body_limit through.
		limit := reqMax
		if reject {
			limit++
		}
		wc = wc.WithRequestBodyAccess().WithRequestBodyLimit(limit).WithRequestBodyInMemoryLimit(limit)
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
	// A request body over the limit is refused in block mode (what
	// Coraza and ModSecurity recommend: the part past the limit would
	// pass uninspected), unless process_partial is asked for. Detect mode
	// refuses nothing: it inspects the body up to the limit. A response
	// body over its limit is inspected up to it.
	switch c.RequestBodyLimitAction {
	case "", "reject", "process_partial":
	default:
		return "", fmt.Errorf("config: request_body_limit_action %q: want \"reject\" or \"process_partial\"", c.RequestBodyLimitAction)
	}
	if c.Mode != "detect" && c.RequestBodyLimitAction != "process_partial" {
		b.WriteString("SecRequestBodyLimitAction Reject\n")
	} else {
		b.WriteString("SecRequestBodyLimitAction ProcessPartial\n")
	}
	b.WriteString("SecResponseBodyLimitAction ProcessPartial\n")
	b.WriteString("SecResponseBodyMimeType text/plain text/html text/xml application/json\n")
	b.WriteString(bodyRules)
	limit := inspectLimit(c)
	if limit < 0 || limit > maxBodyLimit {
		return "", fmt.Errorf("config: inspect_limit is 0 to %d bytes", maxBodyLimit)
	}
	if limit > 0 {
		action := "deny,status:413"
		if c.Mode == "detect" {
			action = "pass,ctl:ruleRemoveById=900000-999999"
		}
		fmt.Fprintf(&b, inspectRules, limit, action, limit, action)
	}
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

func inspectLimit(c *config) int {
	if c.InspectLimit != nil {
		return *c.InspectLimit
	}
	return defaultInspectLimit
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
		// One byte past the limit tells a body over it.
		it, n := feed(req.Body(), reqMax+1, tx.WriteRequestBody)
		switch {
		case n > reqMax && reject:
			sluice.Log(sluice.LevelInfo, "waf: request body over request_body_limit ("+strconv.Itoa(reqMax)+" bytes): refused")
		case n > reqMax:
			sluice.Log(sluice.LevelInfo, "waf: request body over request_body_limit ("+strconv.Itoa(reqMax)+" bytes): inspected in part")
		}
		if it != nil {
			return it
		}
		if inspMax > 0 && n > inspMax && !isMultipart(h.Get("content-type")) {
			if block {
				sluice.Log(sluice.LevelInfo, "waf: request body over inspect_limit ("+strconv.Itoa(inspMax)+" bytes): refused")
				return &types.Interruption{Status: 413, Action: "deny"}
			}
			sluice.Log(sluice.LevelInfo, "waf: request body over inspect_limit ("+strconv.Itoa(inspMax)+" bytes): not inspected")
			return nil
		}
	}
	it, err := tx.ProcessRequestBody()
	if err != nil {
		sluice.Log(sluice.LevelError, "waf: request body: "+err.Error())
	}
	return it
}

// feed reads at most max bytes of body into write, stopping early at an
// interruption or at the body's end. It returns the interruption and the
// bytes read.
func feed(body sluice.Body, max int, write func([]byte) (*types.Interruption, int, error)) (*types.Interruption, int) {
	read := 0
	for read < max {
		p := chunk
		if len(p) > max-read {
			p = p[:max-read]
		}
		n, err := body.Read(p)
		if n > 0 {
			read += n
			it, _, werr := write(p[:n])
			if it != nil {
				return it, read
			}
			if werr != nil {
				sluice.Log(sluice.LevelError, "waf: body: "+werr.Error())
				return nil, read
			}
		}
		if err != nil {
			return nil, read
		}
	}
	return nil, read
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
		if it, _ = feed(resp.Body(), respMax, tx.WriteResponseBody); it == nil {
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

// isMultipart reports whether a Content-Type is multipart/form-data, the
// body Coraza inspects by its fields (ARGS, bounded by inspectRules).
func isMultipart(ct string) bool {
	const mp = "multipart/form-data"
	return len(ct) >= len(mp) && strings.EqualFold(ct[:len(mp)], mp)
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
