package httpwasm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Instantiate defines the http_handler host module in r. Its functions
// find the state of the calling instance in the context of the call (see
// InvocationKey).
func Instantiate(ctx context.Context, r wazero.Runtime) (api.Module, error) {
	b := r.NewHostModuleBuilder(ModuleName)
	fns := map[string]api.GoModuleFunc{
		FuncEnableFeatures:     enableFeatures,
		FuncGetConfig:          getConfig,
		FuncLogEnabled:         logEnabled,
		FuncLog:                logMessage,
		FuncGetMethod:          getMethod,
		FuncSetMethod:          setMethod,
		FuncGetURI:             getURI,
		FuncSetURI:             setURI,
		FuncGetProtocolVersion: getProtocolVersion,
		FuncGetHeaderNames:     getHeaderNames,
		FuncGetHeaderValues:    getHeaderValues,
		FuncSetHeaderValue:     setHeaderValue,
		FuncAddHeaderValue:     addHeaderValue,
		FuncRemoveHeader:       removeHeader,
		FuncReadBody:           readBody,
		FuncWriteBody:          writeBody,
		FuncGetStatusCode:      getStatusCode,
		FuncSetStatusCode:      setStatusCode,
		FuncGetSourceAddr:      getSourceAddr,
	}
	for name, fn := range fns {
		sig := signatures[name]
		b.NewFunctionBuilder().
			WithGoModuleFunction(fn, sig.params, sig.results).
			WithParameterNames(sig.names...).
			Export(name)
	}
	return b.Instantiate(ctx)
}

// trap aborts the guest call with an error wrapping ErrABI.
func trap(format string, args ...any) {
	panic(fmt.Errorf("%w: "+format, append([]any{ErrABI}, args...)...))
}

func invocation(ctx context.Context) *Invocation {
	inv, _ := ctx.Value(InvocationKey{}).(*Invocation)
	if inv == nil {
		trap("host function called outside an invocation")
	}
	return inv
}

// request returns the invocation of a call that needs a request.
func request(ctx context.Context, fn string) *Invocation {
	inv := invocation(ctx)
	if inv.phase == PhaseInit {
		trap("%s: no request outside handle_request and handle_response", fn)
	}
	return inv
}

// mustBeforeNext traps unless called in handle_request.
func (inv *Invocation) mustBeforeNext(fn, what string) {
	if inv.phase != PhaseRequest {
		trap("%s: can't change %s after the next handler ran", fn, what)
	}
}

// mustBeforeNextOr traps unless called in handle_request, or in
// handle_response with feature enabled.
func (inv *Invocation) mustBeforeNextOr(f Features, fn, what string) {
	if inv.phase == PhaseResponse && inv.features&f == 0 {
		trap("%s: %s after the next handler needs %s", fn, what, f)
	}
}

func read(mod api.Module, fn, field string, off, n uint32) []byte {
	if n == 0 {
		return nil
	}
	b, ok := mod.Memory().Read(off, n)
	if !ok {
		trap("%s: %s [%d, %d) is outside memory", fn, field, off, uint64(off)+uint64(n))
	}
	return b
}

// writeLimited writes v to buf when it fits in limit and returns its
// length either way, so the guest can retry with a bigger buffer.
func writeLimited(mod api.Module, fn string, buf, limit uint32, v []byte) uint32 {
	n := uint32(len(v))
	if n == 0 || n > limit {
		return n
	}
	if !mod.Memory().Write(buf, v) {
		trap("%s: buf [%d, %d) is outside memory", fn, buf, uint64(buf)+uint64(n))
	}
	return n
}

func writeStringLimited(mod api.Module, fn string, buf, limit uint32, v string) uint32 {
	n := uint32(len(v))
	if n == 0 || n > limit {
		return n
	}
	if !mod.Memory().WriteString(buf, v) {
		trap("%s: buf [%d, %d) is outside memory", fn, buf, uint64(buf)+uint64(n))
	}
	return n
}

func enableFeatures(ctx context.Context, _ api.Module, stack []uint64) {
	inv := invocation(ctx)
	want := Features(stack[0])
	if inv.phase == PhaseInit {
		inv.InitFeatures = (inv.InitFeatures | want) & Supported
		stack[0] = uint64(inv.InitFeatures)
		return
	}
	inv.features = (inv.features | want) & Supported
	stack[0] = uint64(inv.features)
}

func getConfig(ctx context.Context, mod api.Module, stack []uint64) {
	inv := invocation(ctx)
	stack[0] = uint64(writeLimited(mod, FuncGetConfig, uint32(stack[0]), uint32(stack[1]), inv.Config))
}

func slogLevel(fn string, level int32) (slog.Level, bool) {
	switch level {
	case LogDebug:
		return slog.LevelDebug, true
	case LogInfo:
		return slog.LevelInfo, true
	case LogWarn:
		return slog.LevelWarn, true
	case LogError:
		return slog.LevelError, true
	case LogNone:
		return 0, false
	}
	trap("%s: unknown log level %d", fn, level)
	return 0, false
}

func logEnabled(ctx context.Context, _ api.Module, stack []uint64) {
	inv := invocation(ctx)
	l, ok := slogLevel(FuncLogEnabled, int32(stack[0]))
	stack[0] = 0
	if ok && inv.Logger.Enabled(ctx, l) {
		stack[0] = 1
	}
}

func logMessage(ctx context.Context, mod api.Module, stack []uint64) {
	inv := invocation(ctx)
	l, ok := slogLevel(FuncLog, int32(stack[0]))
	msg := read(mod, FuncLog, "message", uint32(stack[1]), uint32(stack[2]))
	if !ok || !inv.Logger.Enabled(ctx, l) {
		return
	}
	if len(msg) > MaxLogMessage {
		msg = append(msg[:MaxLogMessage:MaxLogMessage], "…"...)
	}
	text, attrs := splitLogfmt(string(msg)) // LogKV's fields become fields
	inv.Logger.LogAttrs(context.Background(), l, text, append(attrs, slog.String("source", "guest"))...)
}

func getMethod(ctx context.Context, mod api.Module, stack []uint64) {
	inv := request(ctx, FuncGetMethod)
	stack[0] = uint64(writeLimited(mod, FuncGetMethod, uint32(stack[0]), uint32(stack[1]), inv.x.Method()))
}

func setMethod(ctx context.Context, mod api.Module, stack []uint64) {
	inv := request(ctx, FuncSetMethod)
	inv.mustBeforeNext(FuncSetMethod, "the method")
	m := read(mod, FuncSetMethod, "method", uint32(stack[0]), uint32(stack[1]))
	if len(m) == 0 || !isToken(m) {
		trap("%s: invalid method %q", FuncSetMethod, m)
	}
	inv.x.SetMethod(string(m))
}

func getURI(ctx context.Context, mod api.Module, stack []uint64) {
	inv := request(ctx, FuncGetURI)
	uri := inv.x.RequestURI()
	if len(uri) == 0 {
		uri = slash
	}
	stack[0] = uint64(writeLimited(mod, FuncGetURI, uint32(stack[0]), uint32(stack[1]), uri))
}

var slash = []byte("/")

func setURI(ctx context.Context, mod api.Module, stack []uint64) {
	inv := request(ctx, FuncSetURI)
	inv.mustBeforeNext(FuncSetURI, "the URI")
	uri := read(mod, FuncSetURI, "uri", uint32(stack[0]), uint32(stack[1]))
	if len(uri) == 0 {
		uri = slash
	}
	if !validURI(uri) {
		trap("%s: invalid request URI %q", FuncSetURI, uri)
	}
	inv.x.SetRequestURI(string(uri))
}

func getProtocolVersion(ctx context.Context, mod api.Module, stack []uint64) {
	inv := request(ctx, FuncGetProtocolVersion)
	stack[0] = uint64(writeStringLimited(mod, FuncGetProtocolVersion, uint32(stack[0]), uint32(stack[1]), inv.x.Proto()))
}

func getSourceAddr(ctx context.Context, mod api.Module, stack []uint64) {
	inv := request(ctx, FuncGetSourceAddr)
	var addr string
	if a := inv.x.RemoteAddr(); a != nil {
		addr = a.String()
	}
	stack[0] = uint64(writeStringLimited(mod, FuncGetSourceAddr, uint32(stack[0]), uint32(stack[1]), addr))
}

func checkKind(fn string, kind uint32) {
	if kind > HeaderResponseTrailers {
		trap("%s: unknown header kind %d", fn, kind)
	}
}

// writeList writes the NUL-terminated strings collected in inv.scratch
// (count of them) when they fit, and returns count<<32 | length.
func writeList(mod api.Module, fn string, buf, limit uint32, list []byte, count int) uint64 {
	if count == 0 {
		return 0
	}
	n := uint32(len(list))
	if n <= limit && !mod.Memory().Write(buf, list) {
		trap("%s: buf [%d, %d) is outside memory", fn, buf, uint64(buf)+uint64(n))
	}
	return uint64(count)<<32 | uint64(n)
}

func getHeaderNames(ctx context.Context, mod api.Module, stack []uint64) {
	inv := request(ctx, FuncGetHeaderNames)
	kind := uint32(stack[0])
	checkKind(FuncGetHeaderNames, kind)
	inv.scratch, inv.spans = inv.scratch[:0], inv.spans[:0]
	collect := func(name, _ []byte) {
		start := len(inv.scratch)
		for _, c := range name {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			inv.scratch = append(inv.scratch, c)
		}
		lower := inv.scratch[start:]
		for _, s := range inv.spans {
			if bytes.Equal(inv.scratch[s[0]:s[1]], lower) {
				inv.scratch = inv.scratch[:start] // seen: one entry per name
				return
			}
		}
		inv.spans = append(inv.spans, [2]int{start, len(inv.scratch)})
		inv.scratch = append(inv.scratch, 0)
	}
	switch kind {
	case HeaderRequest:
		inv.x.VisitRequestHeaders(collect)
	case HeaderResponse:
		inv.x.VisitResponseHeaders(collect)
	}
	stack[0] = writeList(mod, FuncGetHeaderNames, uint32(stack[1]), uint32(stack[2]), inv.scratch, len(inv.spans))
}

func getHeaderValues(ctx context.Context, mod api.Module, stack []uint64) {
	inv := request(ctx, FuncGetHeaderValues)
	kind := uint32(stack[0])
	checkKind(FuncGetHeaderValues, kind)
	name := read(mod, FuncGetHeaderValues, "name", uint32(stack[1]), uint32(stack[2]))
	if len(name) == 0 {
		trap("%s: empty header name", FuncGetHeaderValues)
	}
	inv.scratch = inv.scratch[:0]
	inv.visitName, inv.visitCount = name, 0
	if inv.visit == nil { // bound once: a closure per call would be allocated per call
		inv.visit = inv.collectHeader
	}
	switch kind {
	case HeaderRequest:
		inv.x.VisitRequestHeaders(inv.visit)
	case HeaderResponse:
		inv.x.VisitResponseHeaders(inv.visit)
	}
	count := inv.visitCount
	inv.visitName = nil // guest memory: not kept past the call
	stack[0] = writeList(mod, FuncGetHeaderValues, uint32(stack[3]), uint32(stack[4]), inv.scratch, count)
}

// collectHeader appends to scratch each value of the field visitName.
func (inv *Invocation) collectHeader(n, v []byte) {
	if bytes.EqualFold(n, inv.visitName) {
		inv.scratch = append(append(inv.scratch, v...), 0)
		inv.visitCount++
	}
}

// headerArgs reads and checks the name and value of set/add_header_value.
func headerArgs(inv *Invocation, mod api.Module, fn string, stack []uint64) (kind uint32, name, value string) {
	kind = uint32(stack[0])
	checkKind(fn, kind)
	switch kind {
	case HeaderRequest:
		inv.mustBeforeNext(fn, "request headers")
	case HeaderResponse:
		inv.mustBeforeNextOr(FeatureBufferResponse, fn, "changing response headers")
	default:
		trap("%s: trailers are not supported by this host (enable_features did not grant them)", fn)
	}
	nameLen, valueLen := uint32(stack[2]), uint32(stack[4])
	if uint64(nameLen)+uint64(valueLen) > MaxHeaderField {
		trap("%s: header field of %d bytes is over the limit of %d", fn, uint64(nameLen)+uint64(valueLen), MaxHeaderField)
	}
	inv.headerBytes += int(nameLen + valueLen)
	if inv.headerBytes > MaxHeaderBytes {
		trap("%s: over %d header bytes set in one call", fn, MaxHeaderBytes)
	}
	n := read(mod, fn, "name", uint32(stack[1]), nameLen)
	v := read(mod, fn, "value", uint32(stack[3]), valueLen)
	if len(n) == 0 || !isToken(n) {
		trap("%s: invalid header name %q", fn, n)
	}
	if !validValue(v) {
		trap("%s: header %q: value contains CR, LF or NUL", fn, n)
	}
	return kind, inv.strings.str(n), inv.strings.str(v)
}

func setHeaderValue(ctx context.Context, mod api.Module, stack []uint64) {
	inv := request(ctx, FuncSetHeaderValue)
	kind, n, v := headerArgs(inv, mod, FuncSetHeaderValue, stack)
	if kind == HeaderRequest {
		inv.x.SetRequestHeader(n, v)
	} else {
		inv.saveResponseHeader(n)
		inv.x.SetResponseHeader(n, v)
	}
}

func addHeaderValue(ctx context.Context, mod api.Module, stack []uint64) {
	inv := request(ctx, FuncAddHeaderValue)
	kind, n, v := headerArgs(inv, mod, FuncAddHeaderValue, stack)
	if kind == HeaderRequest {
		inv.x.AddRequestHeader(n, v)
	} else {
		inv.saveResponseHeader(n)
		inv.x.AddResponseHeader(n, v)
	}
}

func removeHeader(ctx context.Context, mod api.Module, stack []uint64) {
	inv := request(ctx, FuncRemoveHeader)
	kind := uint32(stack[0])
	checkKind(FuncRemoveHeader, kind)
	name := read(mod, FuncRemoveHeader, "name", uint32(stack[1]), uint32(stack[2]))
	if len(name) == 0 {
		trap("%s: empty header name", FuncRemoveHeader)
	}
	switch kind {
	case HeaderRequest:
		inv.mustBeforeNext(FuncRemoveHeader, "request headers")
		inv.x.DelRequestHeader(inv.strings.str(name))
	case HeaderResponse:
		inv.mustBeforeNextOr(FeatureBufferResponse, FuncRemoveHeader, "changing response headers")
		n := inv.strings.str(name)
		inv.saveResponseHeader(n)
		inv.x.DelResponseHeader(n)
	default:
		// There are never trailers here, so there is nothing to remove.
	}
}

func readBody(ctx context.Context, mod api.Module, stack []uint64) {
	inv := request(ctx, FuncReadBody)
	kind, buf, limit := uint32(stack[0]), uint32(stack[1]), uint32(stack[2])
	if limit == 0 {
		trap("%s: buf_limit is zero", FuncReadBody)
	}
	var n int
	var err error
	switch kind {
	case BodyRequest:
		if inv.phase == PhaseResponse && inv.features&FeatureBufferRequest == 0 {
			trap("%s: reading the request body after the next handler needs buffer_request", FuncReadBody)
		}
		inv.openRequest()
		b := read(mod, FuncReadBody, "buf", buf, limit)
		if inv.reqBuffer && inv.MaxBuffer >= 0 {
			// Read no further than one byte past the limit.
			if left := inv.MaxBuffer + 1 - int64(len(inv.reqBuf)); int64(len(b)) > left {
				b = b[:max(left, 1)]
			}
		}
		// Waits on the client: bounded by the call's deadline, less the
		// reserve the guest needs to return after the body ends early.
		n, err = inv.readRequest(b, inv.Deadline.Add(-inv.Reserve))
		if inv.reqBuffer {
			inv.bufferRequest(b[:n])
		}
	case BodyResponse:
		inv.mustBeforeNextOr(FeatureBufferResponse, FuncReadBody, "reading the response body")
		inv.openResponse() // buffers a file or a stream now, bounded
		b := read(mod, FuncReadBody, "buf", buf, limit)
		for n < len(b) && err == nil {
			var nn int
			nn, err = inv.respBody.Read(b[n:])
			n += nn
		}
	default:
		trap("%s: unknown body kind %d", FuncReadBody, kind)
	}
	if inv.bodyErr != nil {
		err = io.EOF // the guest sees the body end; the host fails the request
	}
	switch err {
	case nil:
		stack[0] = uint64(n)
	case io.EOF:
		stack[0] = 1<<32 | uint64(n)
	default:
		panic(fmt.Errorf("%s: reading body: %w", FuncReadBody, err))
	}
}

func writeBody(ctx context.Context, mod api.Module, stack []uint64) {
	inv := request(ctx, FuncWriteBody)
	kind, buf, n := uint32(stack[0]), uint32(stack[1]), uint32(stack[2])
	switch kind {
	case BodyRequest:
		inv.mustBeforeNext(FuncWriteBody, "the request body")
	case BodyResponse:
		inv.mustBeforeNextOr(FeatureBufferResponse, FuncWriteBody, "writing the response body")
	default:
		trap("%s: unknown body kind %d", FuncWriteBody, kind)
	}
	inv.bodyBytes += int(n)
	if inv.bodyBytes > MaxBodyWrite {
		trap("%s: over %d body bytes written in one call", FuncWriteBody, MaxBodyWrite)
	}
	b := read(mod, FuncWriteBody, "body", buf, n)
	if kind == BodyRequest {
		if !inv.reqWritten { // the first write replaces the body
			inv.reqWritten = true
			inv.reqOut = make([]byte, 0, len(b))
		}
		inv.reqOut = append(inv.reqOut, b...)
		return
	}
	if !inv.respWrote { // the first write replaces the body
		inv.respWrote = true
		inv.x.ResetBody()
	}
	if len(b) > 0 {
		if _, err := inv.x.Write(b); err != nil {
			panic(fmt.Errorf("%s: writing body: %w", FuncWriteBody, err))
		}
	}
}

func getStatusCode(ctx context.Context, _ api.Module, stack []uint64) {
	inv := request(ctx, FuncGetStatusCode)
	stack[0] = uint64(uint32(inv.x.Status()))
}

func setStatusCode(ctx context.Context, _ api.Module, stack []uint64) {
	inv := request(ctx, FuncSetStatusCode)
	inv.mustBeforeNextOr(FeatureBufferResponse, FuncSetStatusCode, "setting the status code")
	code := uint32(stack[0])
	if code < 100 || code > 999 {
		trap("%s: invalid status code %d", FuncSetStatusCode, code)
	}
	inv.x.SetStatus(int(code))
}

// isToken reports whether b is an RFC 9110 token (method, header name).
func isToken(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 || !tokenChar[c] {
			return false
		}
	}
	return true
}

var tokenChar = func() (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// validValue reports whether a header value is safe to send: no CR, LF or
// NUL, which would let a guest split headers.
func validValue(b []byte) bool {
	return bytes.IndexByte(b, '\r') < 0 && bytes.IndexByte(b, '\n') < 0 && bytes.IndexByte(b, 0) < 0
}

// validURI accepts origin-form ("/p?q"), asterisk-form and absolute-form
// request targets without control characters or spaces.
func validURI(b []byte) bool {
	for _, c := range b {
		if c <= ' ' || c == 0x7f {
			return false
		}
	}
	return b[0] == '/' || string(b) == "*" || bytes.Contains(b, []byte("://"))
}
