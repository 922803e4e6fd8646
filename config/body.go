package config

import (
	"fmt"
	"math/big"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// decoder accumulates diagnostics while it turns HCL bodies into values.
type decoder struct {
	dir   string // absolute directory of the config file
	ctx   *hcl.EvalContext
	diags hcl.Diagnostics

	secrets     map[string]bool // see Config.secrets
	filterNames []string
	meta        map[*Site]*siteMeta
	reported    map[string]bool
	hasStore    bool // the config has a store block: rate limits default to on_store_error "local"
}

func (d *decoder) errorf(rng hcl.Range, summary, format string, args ...any) {
	r := rng
	detail := fmt.Sprintf(format, args...)
	// Messages built from errors end in "%s."; don't double the stop.
	for _, p := range []string{"?.", ")."} {
		if strings.HasSuffix(detail, p) && strings.HasSuffix(format, "%s.") {
			detail = detail[:len(detail)-1]
		}
	}
	d.diags = append(d.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   detail,
		Subject:  &r,
	})
}

// numText renders a number as written: integers without exponent.
func numText(v cty.Value) string {
	bf := v.AsBigFloat()
	if bf.IsInt() && bf.MantExp(nil) <= 64 {
		return bf.Text('f', 0)
	}
	return bf.Text('g', -1)
}

// resolve makes p absolute against the config file's directory. A
// secret path stays one.
func (d *decoder) resolve(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	abs := filepath.Join(d.dir, p)
	if d.secrets[p] {
		d.secrets[abs] = true
	}
	return abs
}

// unmark returns v without marks, recording every string inside a value
// marked secret (from env() or file()) in d.secrets.
func (d *decoder) unmark(v cty.Value) cty.Value {
	if !v.ContainsMarked() {
		return v
	}
	v, marks := v.UnmarkDeepWithPaths()
	for _, pm := range marks {
		if !pm.Marks.Has(secret) {
			continue
		}
		sub, err := pm.Path.Apply(v)
		if err != nil {
			continue
		}
		_ = cty.Walk(sub, func(_ cty.Path, x cty.Value) (bool, error) {
			if x.IsKnown() && !x.IsNull() && x.Type() == cty.String && x.AsString() != "" {
				if d.secrets == nil {
					d.secrets = map[string]bool{}
				}
				d.secrets[x.AsString()] = true
			}
			return true, nil
		})
	}
	return v
}

// isSecret reports whether s came from env() or file().
func (d *decoder) isSecret(s string) bool { return d.secrets[s] }

// body is one decoded block body: its attributes and child blocks, with
// the helpers that read them into typed fields.
type body struct {
	d      *decoder
	what   string    // the block as users know it, for messages: `static`
	def    hcl.Range // the block header, for "missing" problems
	attrs  hcl.Attributes
	blocks hcl.Blocks

	unknown []string // attribute names in the body that the schema lacks
}

// content decodes b against the attribute names and block types allowed.
// Unknown attributes and blocks are reported by hcl, with suggestions.
func (d *decoder) content(b hcl.Body, what string, def hcl.Range, attrs []string, blocks ...hcl.BlockHeaderSchema) *body {
	if recordSchema != nil {
		recordSchema(what, attrs, blocks)
	}
	schema := &hcl.BodySchema{Blocks: blocks}
	for _, a := range attrs {
		schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: a})
	}
	c, diags := b.Content(schema)
	d.diags = append(d.diags, diags...)
	out := &body{d: d, what: what, def: def, attrs: c.Attributes, blocks: c.Blocks}
	if sb, ok := b.(*hclsyntax.Body); ok {
		for name := range sb.Attributes {
			if !contains(attrs, name) {
				out.unknown = append(out.unknown, name)
			}
		}
	}
	return out
}

// recordSchema, when set, is told the schema of every body decoded: the
// docs test learns from it which attribute and block names exist, to
// check the names the Markdown documents. Nil outside that test.
var recordSchema func(what string, attrs []string, blocks []hcl.BlockHeaderSchema)

// blockType is a child block without labels; labeled is one with labels.
func blockType(name string) hcl.BlockHeaderSchema { return hcl.BlockHeaderSchema{Type: name} }
func labeled(name, label string) hcl.BlockHeaderSchema {
	return hcl.BlockHeaderSchema{Type: name, LabelNames: []string{label}}
}

// has reports whether the attribute is present.
func (b *body) has(name string) bool { return b.attrs[name] != nil }

// require reports each of names that is absent.
func (b *body) require(names ...string) bool {
	ok := true
	for _, n := range names {
		typo := false
		for _, u := range b.unknown {
			typo = typo || suggest(u, []string{n}) == n
		}
		if typo {
			ok = false // reported as a misspelling, with a suggestion
			continue
		}
		if !b.has(n) {
			b.d.errorf(b.def, "Missing required argument", "The %s block needs %q.", b.what, n)
			ok = false
		}
	}
	return ok
}

// rng is the range of the attribute's value, or the block header.
func (b *body) rng(name string) hcl.Range {
	if a := b.attrs[name]; a != nil {
		return a.Expr.Range()
	}
	return b.def
}

// single returns the only block of type typ, reporting any further ones.
func (b *body) single(typ string) *hcl.Block {
	var first *hcl.Block
	for _, blk := range b.blocks {
		if blk.Type != typ {
			continue
		}
		if first == nil {
			first = blk
			continue
		}
		b.d.errorf(blk.DefRange, "Duplicate "+typ+" block",
			"A %s block allows one %s block; the first is at %s.", b.what, typ, pos(first.DefRange))
	}
	return first
}

// pos renders a range's start as FILE:LINE:COL for Detail texts.
func pos(r hcl.Range) string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

// value evaluates the attribute; ok is false when it is absent, null or
// failed (the failure reported).
func (b *body) value(name string) (cty.Value, bool) {
	a := b.attrs[name]
	if a == nil {
		return cty.NilVal, false
	}
	v, diags := a.Expr.Value(b.d.ctx)
	b.d.diags = append(b.d.diags, diags...)
	v = b.d.unmark(v)
	if diags.HasErrors() || v.IsNull() {
		return cty.NilVal, false
	}
	if !v.IsWhollyKnown() {
		b.d.errorf(a.Expr.Range(), "Invalid value", "The value of %q cannot be known when the config is loaded.", name)
		return cty.NilVal, false
	}
	return v, true
}

func (b *body) typeError(name, want string, got cty.Value) {
	b.d.errorf(b.rng(name), "Incorrect attribute value type",
		"%q must be %s, not %s.", name, want, typeName(got.Type()))
}

func typeName(t cty.Type) string {
	switch {
	case t == cty.String:
		return "a string"
	case t == cty.Number:
		return "a number"
	case t == cty.Bool:
		return "a bool"
	case t.IsTupleType() || t.IsListType() || t.IsSetType():
		return "a list"
	case t.IsObjectType() || t.IsMapType():
		return "an object"
	}
	return t.FriendlyName()
}

// str reads a string attribute into dst.
func (b *body) str(name string, dst *string) bool {
	v, ok := b.value(name)
	if !ok {
		return false
	}
	if v.Type() != cty.String {
		b.typeError(name, "a string", v)
		return false
	}
	*dst = v.AsString()
	return true
}

// oneOf reads a string attribute that must be one of allowed.
func (b *body) oneOf(name string, dst *string, allowed ...string) bool {
	var s string
	if !b.str(name, &s) {
		return false
	}
	for _, a := range allowed {
		if s == a {
			*dst = s
			return true
		}
	}
	b.d.errorf(b.rng(name), fmt.Sprintf("Invalid %s", name),
		"%q is not a valid %s; use %s.%s", s, name, quoteList(allowed), didYouMean(s, allowed))
	return false
}

// path reads a file path attribute and resolves it.
func (b *body) path(name string, dst *string) bool {
	var s string
	if !b.str(name, &s) {
		return false
	}
	if s == "" {
		b.d.errorf(b.rng(name), "Empty path", "%q must not be empty.", name)
		return false
	}
	*dst = b.d.resolve(s)
	return true
}

// boolean reads a bool attribute.
func (b *body) boolean(name string, dst *bool) bool {
	v, ok := b.value(name)
	if !ok {
		return false
	}
	if v.Type() != cty.Bool {
		b.typeError(name, "true or false", v)
		return false
	}
	*dst = v.True()
	return true
}

// integer reads a whole number in [lo, hi].
func (b *body) integer(name string, dst *int, lo, hi int) bool {
	v, ok := b.value(name)
	if !ok {
		return false
	}
	if v.Type() != cty.Number {
		b.typeError(name, "a whole number", v)
		return false
	}
	bf := v.AsBigFloat()
	i, acc := bf.Int64()
	if acc != big.Exact || !bf.IsInt() {
		b.d.errorf(b.rng(name), "Invalid number", "%q must be a whole number, not %s.", name, numText(v))
		return false
	}
	if i < int64(lo) || i > int64(hi) {
		b.d.errorf(b.rng(name), "Number out of range", "%q must be between %d and %d, not %d.", name, lo, hi, i)
		return false
	}
	*dst = int(i)
	return true
}

// float reads a number in [lo, hi].
func (b *body) float(name string, dst *float64, lo, hi float64) bool {
	v, ok := b.value(name)
	if !ok {
		return false
	}
	if v.Type() != cty.Number {
		b.typeError(name, "a number", v)
		return false
	}
	f, _ := v.AsBigFloat().Float64()
	if f < lo || f > hi {
		b.d.errorf(b.rng(name), "Number out of range", "%q must be between %g and %g, not %g.", name, lo, hi, f)
		return false
	}
	*dst = f
	return true
}

// duration reads a duration string; positive forbids zero.
func (b *body) duration(name string, dst *time.Duration, positive bool) bool {
	v, ok := b.value(name)
	if !ok {
		return false
	}
	if v.Type() == cty.Number {
		n := numText(v)
		b.d.errorf(b.rng(name), "Invalid duration",
			"%s = %s has no unit; write a string with one, like \"%ss\" or \"%sms\" (units: %s).", name, n, n, n, durationUnitList)
		return false
	}
	if v.Type() != cty.String {
		b.typeError(name, `a duration string, like "5s"`, v)
		return false
	}
	t, err := ParseDuration(v.AsString())
	if err != nil {
		b.d.errorf(b.rng(name), "Invalid duration", "%s: %s.", name, err)
		return false
	}
	if positive && t <= 0 {
		b.d.errorf(b.rng(name), "Invalid duration", "%s must be above zero.", name)
		return false
	}
	*dst = t
	return true
}

// size reads a size string into bytes.
func (b *body) size(name string, dst *int64) bool {
	v, ok := b.value(name)
	if !ok {
		return false
	}
	if v.Type() == cty.Number {
		n := numText(v)
		b.d.errorf(b.rng(name), "Invalid size",
			"%s = %s has no unit; write a string with one, like \"%sKiB\" or \"%sB\" (units: %s).", name, n, n, n, sizeUnitList)
		return false
	}
	if v.Type() != cty.String {
		b.typeError(name, `a size string, like "16MiB"`, v)
		return false
	}
	n, err := ParseSize(v.AsString())
	if err != nil {
		b.d.errorf(b.rng(name), "Invalid size", "%s: %s.", name, err)
		return false
	}
	*dst = n
	return true
}

// strList reads a list of strings. It returns the range of each element
// (the attribute's value range where elements have no syntax of their own).
func (b *body) strList(name string, dst *[]string) ([]hcl.Range, bool) {
	v, ok := b.value(name)
	if !ok {
		return nil, false
	}
	t := v.Type()
	if !(t.IsTupleType() || t.IsListType() || t.IsSetType()) {
		b.typeError(name, "a list of strings, like [\"a\", \"b\"]", v)
		return nil, false
	}
	var elems []hcl.Range
	if tc, ok := b.attrs[name].Expr.(*hclsyntax.TupleConsExpr); ok {
		for _, e := range tc.Exprs {
			elems = append(elems, e.Range())
		}
	}
	out := []string{}
	var ranges []hcl.Range
	good := true
	i := 0
	for it := v.ElementIterator(); it.Next(); i++ {
		_, ev := it.Element()
		r := b.rng(name)
		if i < len(elems) && len(elems) == v.LengthInt() {
			r = elems[i]
		}
		if ev.IsNull() || ev.Type() != cty.String {
			b.d.errorf(r, "Incorrect attribute value type", "Each element of %q must be a string, not %s.", name, typeName(ev.Type()))
			good = false
			continue
		}
		out = append(out, ev.AsString())
		ranges = append(ranges, r)
	}
	if !good {
		return nil, false
	}
	*dst = out
	return ranges, true
}

// strMap reads an object of strings. It returns the range of each key.
func (b *body) strMap(name string, dst *map[string]string) (map[string]hcl.Range, bool) {
	v, ok := b.value(name)
	if !ok {
		return nil, false
	}
	t := v.Type()
	if !(t.IsObjectType() || t.IsMapType()) {
		b.typeError(name, "an object of strings, like { name = \"value\" }", v)
		return nil, false
	}
	keyRanges := b.keyRanges(name)
	out := map[string]string{}
	ranges := map[string]hcl.Range{}
	good := true
	for it := v.ElementIterator(); it.Next(); {
		kv, ev := it.Element()
		k := kv.AsString()
		r, ok := keyRanges[k]
		if !ok {
			r = b.rng(name)
		}
		if ev.IsNull() || ev.Type() != cty.String {
			b.d.errorf(r, "Incorrect attribute value type", "Each value of %q must be a string, not %s.", name, typeName(ev.Type()))
			good = false
			continue
		}
		out[k] = ev.AsString()
		ranges[k] = r
	}
	if !good {
		return nil, false
	}
	*dst = out
	return ranges, true
}

// keyRanges maps the keys of an object constructor to their ranges.
func (b *body) keyRanges(name string) map[string]hcl.Range {
	m := map[string]hcl.Range{}
	oc, ok := b.attrs[name].Expr.(*hclsyntax.ObjectConsExpr)
	if !ok {
		return m
	}
	for _, item := range oc.Items {
		kv, diags := item.KeyExpr.Value(b.d.ctx)
		kv, _ = kv.Unmark()
		if diags.HasErrors() || kv.IsNull() || !kv.IsKnown() {
			continue
		}
		switch kv.Type() {
		case cty.String:
			m[kv.AsString()] = item.KeyExpr.Range()
		case cty.Number:
			m[numText(kv)] = item.KeyExpr.Range()
		}
	}
	return m
}

// statusMap reads `{ 404 = "x" }` into a map keyed by status code.
func (b *body) statusMap(name string, dst *map[int]string) (map[int]hcl.Range, bool) {
	var m map[string]string
	ranges, ok := b.strMap(name, &m)
	if !ok {
		return nil, false
	}
	out := map[int]string{}
	outR := map[int]hcl.Range{}
	good := true
	for k, v := range m {
		code, err := strconv.Atoi(k)
		if err != nil || code < 400 || code > 599 {
			b.d.errorf(ranges[k], "Invalid status code", "Keys of %q must be error status codes, 400-599, not %q.", name, k)
			good = false
			continue
		}
		out[code] = v
		outR[code] = ranges[k]
	}
	if !good {
		return nil, false
	}
	*dst = out
	return outR, true
}

// headers reads a map of header names to values.
func (b *body) headers(name string, dst *map[string]string) bool {
	var m map[string]string
	ranges, ok := b.strMap(name, &m)
	if !ok {
		return false
	}
	good := true
	for _, k := range sortedKeys(m) {
		if err := checkHeaderName(k); err != nil {
			b.d.errorf(ranges[k], "Invalid header name", "%s.", err)
			good = false
		} else if err := checkHeaderValue(m[k], b.d.isSecret(m[k])); err != nil {
			b.d.errorf(ranges[k], "Invalid header value", "%s.", err)
			good = false
		}
	}
	if good {
		*dst = m
	}
	return good
}

// subset reads a list whose elements come from allowed, without repeats.
func (b *body) subset(name string, dst *[]string, allowed ...string) bool {
	var l []string
	ranges, ok := b.strList(name, &l)
	if !ok {
		return false
	}
	good := true
	seen := map[string]bool{}
	for i, s := range l {
		switch {
		case !contains(allowed, s):
			b.d.errorf(ranges[i], fmt.Sprintf("Invalid %s", name),
				"%q is not allowed in %s; use %s.%s", s, name, quoteList(allowed), didYouMean(s, allowed))
			good = false
		case seen[s]:
			b.d.errorf(ranges[i], fmt.Sprintf("Duplicate in %s", name), "%q is listed twice.", s)
			good = false
		}
		seen[s] = true
	}
	if good {
		*dst = l
	}
	return good
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
