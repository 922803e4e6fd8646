package config

import (
	"fmt"
	"math"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// A Block is the decoded value of a block whose schema a package
// registered (RegisterHandler, RegisterRouteBlock): a pointer to a struct
// whose fields tagged `hcl:"…"` are the block's attributes and child
// blocks. The host turns it into what serves requests.
//
// The tag is `hcl:"NAME,OPTION,…"`. Without an option, NAME is an
// attribute, decoded by the field's Go type: string, bool, int (0 to
// 2^31-1 unless min= and max= say otherwise), int64 (a size, "16MiB"),
// float64, time.Duration ("5s", not negative), []string, []netip.Prefix
// (IP addresses or CIDR prefixes), map[string]string and map[int]string
// (status code keys, 400-599). The options:
//
//	block       NAME is a child block: a struct or a pointer to one (nil
//	            when absent; a new one gets SetDefaults when it has it)
//	label       the field receives the block's label, named NAME
//	custom      NAME is in the schema, decoded by the DecodeHCL method
//	range       an hcl.Range field: the value of attribute NAME, or the
//	            block's header when NAME is empty or absent
//	required    the attribute must be present
//	positive    a duration above zero
//	min=N max=N bounds of an int or float64
//	oneof=A|B   a string, one of those
//	subset=A|B  a []string of those, no repeats
//	file        a string: a readable file, resolved against the config
//	            file's directory
//	path        a string: a path, resolved against that directory
//	header      a string (or each of a []string) is a header name
//	headers     a map[string]string of header names and values; /config
//	            shows the values "(redacted)"
//	url         a string shown with RedactURL in /config
//
// Fields without an hcl tag are not part of the block (the host's
// run-time dependencies); in the /config JSON a field is named by its
// json tag, else by its hcl NAME. The tags `doc:"…"`, `type:"…"` and
// `default:"…"` are the block's reference (see Reference).
//
// After the tagged fields, DecodeHCL(*Body) is called when the value has
// it: it decodes the custom names and checks what spans attributes.
type Block any

// blockSpec is one registered block kind.
type blockSpec struct {
	kind     string
	handler  bool // a route's one handler, not a block beside it
	defaults func() Block
}

var (
	registryMu sync.RWMutex
	registry   = map[string]*blockSpec{}
)

// RegisterHandler registers the handler block kind (`proxy {}`): a route
// has exactly one handler block. defaults returns a new value holding
// every default of the block, stated there once; the block's attributes
// are decoded into it. Call it from an init function of the package that
// implements the handler; registering a kind twice panics.
func RegisterHandler(kind string, defaults func() Block) { register(kind, true, defaults) }

// RegisterRouteBlock registers a block a route may have beside its
// handler (`rate_limit {}`), as RegisterHandler does.
func RegisterRouteBlock(kind string, defaults func() Block) { register(kind, false, defaults) }

func register(kind string, handler bool, defaults func() Block) {
	v := defaults()
	if rv := reflect.ValueOf(v); rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("config: block %q: defaults returns %T, want a pointer to a struct", kind, v))
	}
	schemaOf(reflect.TypeOf(v).Elem()) // panics on a malformed tag
	registryMu.Lock()
	defer registryMu.Unlock()
	if registry[kind] != nil {
		panic(fmt.Sprintf("config: block %q registered twice", kind))
	}
	registry[kind] = &blockSpec{kind: kind, handler: handler, defaults: defaults}
}

// routeBlocks returns the registered kinds, sorted.
func routeBlocks() []*blockSpec {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]*blockSpec, 0, len(registry))
	for _, s := range registry {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *blockSpec) int { return strings.Compare(a.kind, b.kind) })
	return out
}

// handlerKinds lists the registered handler kinds, sorted.
func handlerKinds() []string {
	var out []string
	for _, s := range routeBlocks() {
		if s.handler {
			out = append(out, s.kind)
		}
	}
	return out
}

// field is one tagged field of a block struct.
type field struct {
	index    int
	name     string
	block    bool
	label    bool
	custom   bool
	rng      bool
	opts     map[string]string
	blockDef hcl.BlockHeaderSchema
}

func (f *field) has(opt string) bool { _, ok := f.opts[opt]; return ok }

var schemas sync.Map // reflect.Type → []*field

// schemaOf parses the hcl tags of struct type t.
func schemaOf(t reflect.Type) []*field {
	if s, ok := schemas.Load(t); ok {
		return s.([]*field)
	}
	var out []*field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag, ok := sf.Tag.Lookup("hcl")
		if !ok {
			continue
		}
		parts := strings.Split(tag, ",")
		f := &field{index: i, name: parts[0], opts: map[string]string{}}
		for _, p := range parts[1:] {
			k, v, _ := strings.Cut(p, "=")
			f.opts[k] = v
		}
		f.block, f.label, f.custom, f.rng = f.has("block"), f.has("label"), f.has("custom"), f.has("range")
		if f.block {
			f.blockDef = hcl.BlockHeaderSchema{Type: f.name}
			if l := f.opts["label"]; l != "" {
				f.blockDef.LabelNames = []string{l}
				f.label = false
			}
		}
		if !sf.IsExported() && !f.custom {
			panic(fmt.Sprintf("config: %s.%s: an unexported field can only be custom", t, sf.Name))
		}
		out = append(out, f)
	}
	schemas.Store(t, out)
	return out
}

// attrNames and blockDefs are the HCL schema of a struct.
func attrNames(fields []*field) (attrs []string, blocks []hcl.BlockHeaderSchema) {
	for _, f := range fields {
		switch {
		case f.rng || f.label:
		case f.block:
			blocks = append(blocks, f.blockDef)
		default:
			attrs = append(attrs, f.name)
		}
	}
	return attrs, blocks
}

// Body is one block of a registered kind being decoded, for its DecodeHCL
// method: its attributes and child blocks, and the decoder's diagnostics.
type Body struct{ b *body }

// decodeBlock decodes blk into dst, a pointer to a tagged struct, and
// returns its body.
func (d *decoder) decodeBlock(blk *hcl.Block, what string, dst any) *Body {
	v := reflect.ValueOf(dst).Elem()
	fields := schemaOf(v.Type())
	attrs, blocks := attrNames(fields)
	b := d.content(blk.Body, what, blk.DefRange, attrs, blocks...)
	x := &Body{b}
	for _, f := range fields {
		fv := v.Field(f.index)
		switch {
		case f.custom:
		case f.label:
			if len(blk.Labels) > 0 {
				fv.SetString(blk.Labels[0])
			}
		case f.rng:
			r := blk.DefRange
			if f.name != "" {
				r = b.rng(f.name)
			}
			fv.Set(reflect.ValueOf(r))
		case f.block:
			cb := b.single(f.name)
			if cb == nil {
				continue
			}
			target := fv
			if fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					fv.Set(reflect.New(fv.Type().Elem()))
					if s, ok := fv.Interface().(interface{ SetDefaults() }); ok {
						s.SetDefaults()
					}
				}
				target = fv.Elem()
			}
			d.decodeBlock(cb, f.name, target.Addr().Interface())
		default:
			if f.has("required") && !b.require(f.name) {
				continue
			}
			x.decodeAttr(f, fv)
		}
	}
	if h, ok := dst.(interface{ DecodeHCL(*Body) }); ok {
		h.DecodeHCL(x)
	}
	return x
}

var (
	durType    = reflect.TypeFor[time.Duration]()
	prefixType = reflect.TypeFor[netip.Prefix]()
)

// decodeAttr decodes attribute f.name into fv by its type and options.
func (x *Body) decodeAttr(f *field, fv reflect.Value) {
	b, name := x.b, f.name
	switch {
	case fv.Type() == durType:
		var t time.Duration
		if b.duration(name, &t, f.has("positive")) {
			fv.SetInt(int64(t))
		}
	case fv.Kind() == reflect.String:
		var s string
		switch {
		case f.opts["oneof"] != "":
			s = fv.String()
			if !b.oneOf(name, &s, strings.Split(f.opts["oneof"], "|")...) {
				return
			}
		case f.has("file"):
			if !b.d.file(b, name, &s) {
				return
			}
		case f.has("path"):
			if !b.path(name, &s) {
				return
			}
		default:
			if !b.str(name, &s) {
				return
			}
			if f.has("header") && s != "" {
				if err := checkHeaderName(s); err != nil {
					b.d.errorf(b.rng(name), "Invalid header name", "%s.", err)
				}
			}
		}
		fv.SetString(s)
	case fv.Kind() == reflect.Bool:
		var v bool
		if b.boolean(name, &v) {
			fv.SetBool(v)
		}
	case fv.Kind() == reflect.Int:
		lo, hi := 0, math.MaxInt32
		if s, ok := f.opts["min"]; ok {
			lo, _ = strconv.Atoi(s)
		}
		if s, ok := f.opts["max"]; ok {
			hi, _ = strconv.Atoi(s)
		}
		var n int
		if b.integer(name, &n, lo, hi) {
			fv.SetInt(int64(n))
		}
	case fv.Kind() == reflect.Int64:
		var n int64
		if b.size(name, &n) {
			fv.SetInt(n)
		}
	case fv.Kind() == reflect.Float64:
		lo, hi := math.Inf(-1), math.Inf(1)
		if s, ok := f.opts["min"]; ok {
			lo, _ = strconv.ParseFloat(s, 64)
		}
		if s, ok := f.opts["max"]; ok {
			hi, _ = strconv.ParseFloat(s, 64)
		}
		var n float64
		if b.float(name, &n, lo, hi) {
			fv.SetFloat(n)
		}
	case fv.Type() == reflect.TypeFor[[]string]():
		var l []string
		if sub := f.opts["subset"]; sub != "" {
			if b.subset(name, &l, strings.Split(sub, "|")...) {
				fv.Set(reflect.ValueOf(l))
			}
			return
		}
		ranges, ok := b.strList(name, &l)
		if !ok {
			return
		}
		for i, s := range l {
			if f.has("header") {
				if err := checkHeaderName(s); err != nil {
					b.d.errorf(ranges[i], "Invalid header name", "%s.", err)
				}
			}
		}
		fv.Set(reflect.ValueOf(l))
	case fv.Type() == reflect.SliceOf(prefixType):
		var l []string
		ranges, ok := b.strList(name, &l)
		if !ok {
			return
		}
		out := []netip.Prefix{}
		for i, s := range l {
			p, err := parsePrefix(s)
			if err != nil {
				b.d.errorf(ranges[i], "Invalid address", "%s.", err)
				continue
			}
			out = append(out, p)
		}
		fv.Set(reflect.ValueOf(out))
	case fv.Type() == reflect.TypeFor[map[string]string]():
		var m map[string]string
		if f.has("headers") {
			if b.headers(name, &m) {
				fv.Set(reflect.ValueOf(m))
			}
		} else if _, ok := b.strMap(name, &m); ok {
			fv.Set(reflect.ValueOf(m))
		}
	case fv.Type() == reflect.TypeFor[map[int]string]():
		var m map[int]string
		if _, ok := b.statusMap(name, &m); ok {
			fv.Set(reflect.ValueOf(m))
		}
	default:
		panic(fmt.Sprintf("config: attribute %q: no decoding for %s; tag it custom", name, fv.Type()))
	}
}

// parsePrefix parses an IP address (a prefix of its full length) or a
// CIDR prefix.
func parsePrefix(s string) (netip.Prefix, error) {
	if err := checkCIDR(s); err != nil {
		return netip.Prefix{}, err
	}
	if !strings.Contains(s, "/") {
		a, _ := netip.ParseAddr(s)
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, _ := netip.ParsePrefix(s)
	return p.Masked(), nil
}

// Has reports whether the attribute is present.
func (x *Body) Has(name string) bool { return x.b.has(name) }

// Range is the range of the attribute's value, or the block's header when
// it is absent.
func (x *Body) Range(name string) hcl.Range { return x.b.rng(name) }

// AttrRange is the range of the whole attribute (`name = value`), or the
// block's header when it is absent.
func (x *Body) AttrRange(name string) hcl.Range {
	if a := x.b.attrs[name]; a != nil {
		return a.Range
	}
	return x.b.def
}

// DefRange is the block's header.
func (x *Body) DefRange() hcl.Range { return x.b.def }

// Errorf reports a problem at rng; the detail is a sentence.
func (x *Body) Errorf(rng hcl.Range, summary, format string, args ...any) {
	x.b.d.errorf(rng, summary, format, args...)
}

// Require reports the attribute when it is absent.
func (x *Body) Require(name string) bool { return x.b.require(name) }

// Value is the attribute's value; ok is false when it is absent, null or
// failed (the failure reported).
func (x *Body) Value(name string) (v cty.Value, ok bool) { return x.b.value(name) }

// TypeError reports that the attribute is not want.
func (x *Body) TypeError(name, want string, got cty.Value) { x.b.typeError(name, want, got) }

// Strings reads a list of strings, with the range of each element.
func (x *Body) Strings(name string, dst *[]string) ([]hcl.Range, bool) { return x.b.strList(name, dst) }

// String reads a string attribute.
func (x *Body) String(name string, dst *string) bool { return x.b.str(name, dst) }

// OneOf reads a string attribute that must be one of allowed.
func (x *Body) OneOf(name string, dst *string, allowed ...string) bool {
	return x.b.oneOf(name, dst, allowed...)
}

// Blocks returns the child blocks of type typ, in file order.
func (x *Body) Blocks(typ string) []*hcl.Block {
	var out []*hcl.Block
	for _, blk := range x.b.blocks {
		if blk.Type == typ {
			out = append(out, blk)
		}
	}
	return out
}

// Decode decodes a child block into dst, a pointer to a tagged struct
// (see Block), named what in messages.
func (x *Body) Decode(blk *hcl.Block, what string, dst any) *Body {
	return x.b.d.decodeBlock(blk, what, dst)
}

// IsSecret reports whether s came from env() or file().
func (x *Body) IsSecret(s string) bool { return x.b.d.isSecret(s) }

// Resolve makes a path from the config absolute against the config
// file's directory.
func (x *Body) Resolve(p string) string { return x.b.d.resolve(p) }

// HasStore reports whether the config has a `store {}` block: state
// shared with other instances.
func (x *Body) HasStore() bool { return x.b.d.hasStore }

// Pos renders a range's start as FILE:LINE:COL, for messages that point
// at another place.
func Pos(r hcl.Range) string { return pos(r) }

// NumberText renders a number as written: integers without exponent.
func NumberText(v cty.Value) string { return numText(v) }

// DidYouMean is " Did you mean "x"?" when s is a likely typo of one of
// candidates, else "".
func DidYouMean(s string, candidates []string) string { return didYouMean(s, candidates) }

// CheckHeaderName reports whether s is an HTTP header field name.
func CheckHeaderName(s string) error { return checkHeaderName(s) }

// CheckHeaderValue rejects a value that would break the header framing;
// hidden keeps a secret out of the message.
func CheckHeaderValue(s string, hidden bool) error { return checkHeaderValue(s, hidden) }

// CheckHostPort reports what is wrong with a "host:port" address, or
// returns nil.
func CheckHostPort(addr string) error { return checkListenAddr(addr) }

// CheckHostName reports what is wrong with a host name (a site name), or
// returns nil.
func CheckHostName(s string) error { return checkSiteName(s) }

// registeredBlock returns the registered kind typ, or nil.
func registeredBlock(typ string) *blockSpec {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return registry[typ]
}

// ElemRange is the range of element i of a list attribute, or of the
// value when the list is not written out element by element.
func (x *Body) ElemRange(name string, i int) hcl.Range {
	if a := x.b.attrs[name]; a != nil {
		if tc, ok := a.Expr.(*hclsyntax.TupleConsExpr); ok && i < len(tc.Exprs) {
			return tc.Exprs[i].Range()
		}
	}
	return x.b.rng(name)
}

// KeyRange is the range of key k of an object attribute (a number key
// written as its text), or of the value when k is not written out.
func (x *Body) KeyRange(name, k string) hcl.Range {
	if x.b.attrs[name] != nil {
		if r, ok := x.b.keyRanges(name)[k]; ok {
			return r
		}
	}
	return x.b.rng(name)
}

// IOReason describes a file system error without the path it names.
func IOReason(err error) string { return ioReason(err) }

// ValidMediaType reports whether s is a media type, parameters allowed.
func ValidMediaType(s string) bool { return validMediaType(s) }

// ValidMediaRange reports whether s is a media type or "type/*".
func ValidMediaRange(s string) bool { return validMediaRange(s) }
