package exchange

import (
	"bytes"
	"strings"
	"unsafe"

	"github.com/sluicehq/sluice/host/internal/ascii"
)

// The request header of a fastExchange is served from the bytes the
// client sent (fasthttp's RawHeaders), not from fasthttp's parsed view.
// That view is lossy: it re-serializes Cookie from its own cookie list
// (dropping the pairs it cannot parse), skips User-Agent, Content-Type
// and Host when their value is empty, keeps only the last User-Agent and
// Content-Type, and moves its special fields ahead of the others. A proxy
// and a filter must see what the client sent.
//
// On first use the raw block is cut into fastHeader.fields, slices of it
// (no copy but for folded lines), in buffers the pooled exchange keeps;
// Set, Add and Del edit that list. Every edit is also made on fasthttp's
// header, so that what fasthttp itself reads (Host, Content-Length, the
// connection's framing) stays in step.

// fastHeader is the request header state of a pooled fastExchange; its
// buffers survive the pool.
type fastHeader struct {
	mode   uint8
	fields []field // hdrFields: the header, in order
	tmp    []field // scratch for reconcile
	arena  []byte  // copies of folded, edited and reconciled bytes
}

type field struct {
	k, v []byte
	drop bool // reconcile: replaced by fasthttp's values
}

const (
	hdrUndecided = iota
	hdrParsed    // no raw bytes (a request built in process): fasthttp's view
	hdrFields    // fields, cut from the raw bytes and edited since
)

// emptyValue is a present, empty value: nil means absent.
var emptyValue = []byte{}

func (h *fastHeader) reset() {
	clear(h.fields) // drop references to the last request's bytes
	clear(h.tmp)
	h.mode, h.fields, h.tmp, h.arena = hdrUndecided, h.fields[:0], h.tmp[:0], h.arena[:0]
	if cap(h.arena) > 64<<10 {
		h.arena = nil
	}
	if cap(h.fields) > 256 {
		h.fields, h.tmp = nil, nil
	}
}

// keep copies b into the arena. Earlier copies stay valid when the arena
// grows: they keep the old array, which is never written again.
func (h *fastHeader) keep(b []byte) []byte {
	if len(b) == 0 {
		return emptyValue
	}
	n := len(h.arena)
	h.arena = append(h.arena, b...)
	return h.arena[n:len(h.arena):len(h.arena)]
}

func (h *fastHeader) keepString(s string) []byte {
	return h.keep(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// headerMode decides, once per request, where the header is read from.
func (x *fastExchange) headerMode() uint8 {
	if x.hdr.mode != hdrUndecided {
		return x.hdr.mode
	}
	raw := x.ctx.Request.Header.RawHeaders()
	if len(raw) == 0 {
		x.hdr.mode = hdrParsed
		return hdrParsed
	}
	x.fieldsFromRaw(raw)
	if !x.fieldsMatch() {
		x.reconcile()
	}
	x.hdr.mode = hdrFields
	return hdrFields
}

func (x *fastExchange) RequestHeader(name string) []byte {
	var v []byte
	switch x.headerMode() {
	case hdrParsed:
		v = x.ctx.Request.Header.Peek(name)
	case hdrFields:
		for _, f := range x.hdr.fields {
			if ascii.EqualFold(f.k, name) {
				v = f.v
				break
			}
		}
	}
	if v == nil && len(name) == 4 && strings.EqualFold(name, "host") {
		return x.ctx.Request.Header.Host()
	}
	return v
}

func (x *fastExchange) VisitRequestHeaders(fn func(name, value []byte)) {
	switch x.headerMode() {
	case hdrParsed:
		for k, v := range x.ctx.Request.Header.All() {
			fn(k, v)
		}
	case hdrFields:
		for _, f := range x.hdr.fields {
			fn(f.k, f.v)
		}
	}
}

// SetRequestHeader replaces the first field named name in place and
// drops the others, or adds one at the end.
func (x *fastExchange) SetRequestHeader(name, value string) {
	if x.headerMode() == hdrFields {
		h := &x.hdr
		out, set := h.fields[:0], false
		for _, f := range h.fields {
			if ascii.EqualFold(f.k, name) {
				if set {
					continue
				}
				f.v, set = h.keepString(value), true
			}
			out = append(out, f)
		}
		clear(h.fields[len(out):])
		h.fields = out
		if !set {
			h.fields = append(h.fields, field{k: h.keepString(name), v: h.keepString(value)})
		}
	}
	x.ctx.Request.Header.Set(name, value)
}

func (x *fastExchange) AddRequestHeader(name, value string) {
	if x.headerMode() == hdrFields {
		h := &x.hdr
		h.fields = append(h.fields, field{k: h.keepString(name), v: h.keepString(value)})
	}
	x.ctx.Request.Header.Add(name, value)
}

func (x *fastExchange) DelRequestHeader(name string) {
	if x.headerMode() == hdrFields {
		h := &x.hdr
		out := h.fields[:0]
		for _, f := range h.fields {
			if !ascii.EqualFold(f.k, name) {
				out = append(out, f)
			}
		}
		clear(h.fields[len(out):])
		h.fields = out
	}
	x.ctx.Request.Header.Del(name)
}

// nextField returns the first field of a raw header block and the rest
// of the block; ok is false at the blank line that ends it. The value is
// trimmed of the spaces and tabs around it, as fasthttp trims it, and is
// never nil: an empty value is present.
func nextField(b []byte) (k, v, rest []byte, ok bool) {
	line := b
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		line, rest = b[:i], b[i+1:]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	c := bytes.IndexByte(line, ':')
	if c <= 0 { // the blank line; fasthttp refused lines without a name
		return nil, nil, nil, false
	}
	v = ascii.TrimOWS(line[c+1:])
	// Capacity cut, so that a caller's append cannot write over the next field.
	return line[:c:c], v[:len(v):len(v)], rest, true
}

// fieldsFromRaw cuts a raw block into h.fields. Nothing is copied but
// folded values, which are joined as fasthttp joins them (RFC 9112,
// section 5.2: each fold becomes a space).
func (x *fastExchange) fieldsFromRaw(raw []byte) {
	h := &x.hdr
	h.fields = h.fields[:0]
	for rest := raw; ; {
		var k, v []byte
		var ok bool
		if k, v, rest, ok = nextField(rest); !ok {
			return
		}
		if len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t') {
			n := len(h.arena)
			h.arena = append(h.arena, v...)
			for len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t') {
				line := rest
				if i := bytes.IndexByte(rest, '\n'); i >= 0 {
					line, rest = rest[:i], rest[i+1:]
				} else {
					rest = nil
				}
				line = ascii.TrimOWS(bytes.TrimSuffix(line, []byte("\r")))
				if len(h.arena) > n {
					h.arena = append(h.arena, ' ')
				}
				h.arena = append(h.arena, line...)
			}
			v = h.arena[n:len(h.arena):len(h.arena)]
			if len(v) == 0 {
				v = emptyValue
			}
		}
		h.fields = append(h.fields, field{k: k, v: v})
	}
}

// special reports the fields that fasthttp keeps apart from the others
// (or rewrites), whose parsed form cannot be compared with the raw one.
func special(k []byte) bool {
	switch len(k) {
	case 4:
		return ascii.EqualFold(k, "host")
	case 6:
		return ascii.EqualFold(k, "cookie")
	case 7:
		return ascii.EqualFold(k, "trailer")
	case 10:
		return ascii.EqualFold(k, "user-agent") || ascii.EqualFold(k, "connection")
	case 12:
		return ascii.EqualFold(k, "content-type")
	case 14:
		return ascii.EqualFold(k, "content-length")
	case 17:
		return ascii.EqualFold(k, "transfer-encoding")
	}
	return false
}

// fieldsMatch reports whether fasthttp's parsed fields, special ones
// aside, are still those of the raw block, in order: a field deleted or
// set on fasthttp's header before the exchange existed (the listener
// strips and sets the client certificate's header) must not come back
// from the raw bytes.
func (x *fastExchange) fieldsMatch() bool {
	fields, i, same := x.hdr.fields, 0, true
	for k, v := range x.ctx.Request.Header.All() {
		if special(k) {
			continue
		}
		for i < len(fields) && special(fields[i].k) {
			i++
		}
		if i == len(fields) || !ascii.EqualFold(fields[i].k, b2s(k)) || !bytes.Equal(fields[i].v, v) {
			same = false
			break
		}
		i++
	}
	for ; same && i < len(fields); i++ {
		same = special(fields[i].k)
	}
	return same
}

// reconcile makes h.fields, read from the raw bytes, agree with
// fasthttp's parsed view where the two differ for a name that is not
// special: the parsed values win, at the end. The raw ones are kept for
// every name whose values are the same in both.
func (x *fastExchange) reconcile() {
	h := &x.hdr
	parsed := h.tmp[:0]
	for k, v := range x.ctx.Request.Header.All() {
		if !special(k) {
			// Copied: edits made on fasthttp's header later reuse its memory.
			parsed = append(parsed, field{k: h.keep(k), v: h.keep(v)})
		}
	}
	same := func(name []byte) bool {
		i, j := 0, 0
		for {
			for i < len(h.fields) && !ascii.EqualFold(h.fields[i].k, b2s(name)) {
				i++
			}
			for j < len(parsed) && !ascii.EqualFold(parsed[j].k, b2s(name)) {
				j++
			}
			if i == len(h.fields) || j == len(parsed) {
				return i == len(h.fields) && j == len(parsed)
			}
			if !bytes.Equal(h.fields[i].v, parsed[j].v) {
				return false
			}
			i, j = i+1, j+1
		}
	}
	for i := range h.fields {
		h.fields[i].drop = !special(h.fields[i].k) && !same(h.fields[i].k)
	}
	n := 0
	for _, f := range h.fields {
		if !f.drop {
			h.fields[n] = f
			n++
		}
	}
	clear(h.fields[n:])
	h.fields = h.fields[:n]
	for _, f := range parsed {
		if !same(f.k) {
			h.fields = append(h.fields, f)
		}
	}
	clear(parsed)
	h.tmp = parsed[:0]
}

// b2s views b as a string without copying; the string must not outlive b.
func b2s(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
