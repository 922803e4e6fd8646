package config

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"time"
)

// Reference returns the reference tables of the registered block kind,
// in Markdown, as config/CONFIG.md shows them: the block's own table,
// then one per child block type, in field order. A row is made of a
// field's tags: its name (or the `row` tag; "-" leaves the field out),
// its type (by the Go type, or the `type` tag), its default (rendered
// from the value the kind's defaults give, or the `default` tag, or
// "required") and its `doc` tag. In the tags, "|" stands for a backquote.
// It returns nil for a kind not registered.
func Reference(kind string) []string {
	spec := registeredBlock(kind)
	if spec == nil {
		return nil
	}
	var tables []string
	seen := map[reflect.Type]bool{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		if seen[v.Type()] {
			return
		}
		seen[v.Type()] = true
		tables = append(tables, refTable(v))
		for _, f := range schemaOf(v.Type()) {
			if !f.block || f.custom {
				continue
			}
			fv := v.Field(f.index)
			if fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					fv = reflect.New(fv.Type().Elem())
					if s, ok := fv.Interface().(interface{ SetDefaults() }); ok {
						s.SetDefaults()
					}
				}
				fv = fv.Elem()
			}
			walk(fv)
		}
	}
	walk(reflect.ValueOf(spec.defaults()).Elem())
	return tables
}

// refTable is the table of one struct value holding the defaults.
func refTable(v reflect.Value) string {
	var rows []string
	blocks := false
	for _, f := range schemaOf(v.Type()) {
		if f.rng || f.label {
			continue
		}
		sf := v.Type().Field(f.index)
		name := "`" + f.name + "`"
		if f.block {
			blocks = true
			name = "`" + f.name + " {}`"
		}
		if r, ok := sf.Tag.Lookup("row"); ok {
			if r == "-" {
				continue
			}
			name = r
		}
		typ, ok := sf.Tag.Lookup("type")
		if !ok {
			typ = refType(sf.Type, f.block)
		}
		def, ok := sf.Tag.Lookup("default")
		switch {
		case ok:
		case f.has("required"):
			def = "required"
		case f.block || f.custom:
			def = ""
		default:
			def = "`" + refValue(v.Field(f.index)) + "`"
		}
		rows = append(rows, refRow(name, typ, def, sf.Tag.Get("doc")))
	}
	head := "| attribute | type | default | |\n"
	if blocks {
		head = "| attribute / block | type | default | |\n"
	}
	return head + "|---|---|---|---|\n" + strings.Join(rows, "")
}

// refRow renders one row; "|" in a cell stands for a backquote.
func refRow(cells ...string) string {
	var b strings.Builder
	b.WriteString("|")
	for _, c := range cells {
		c = strings.ReplaceAll(c, "|", "`")
		if c == "" {
			b.WriteString(" |")
		} else {
			b.WriteString(" " + c + " |")
		}
	}
	b.WriteString("\n")
	return b.String()
}

func refType(t reflect.Type, block bool) string {
	switch {
	case block:
		return "block"
	case t == durType:
		return "duration"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Float64:
		return "number"
	case reflect.Int64:
		return "size"
	case reflect.Slice:
		return "list"
	case reflect.Map:
		return "map"
	}
	return t.String()
}

// refValue renders a default as it is written in a config.
func refValue(v reflect.Value) string {
	switch {
	case v.Type() == durType:
		return `"` + formatDuration(time.Duration(v.Int())) + `"`
	case v.Type() == reflect.TypeFor[[]netip.Prefix]():
		var l []string
		for _, p := range v.Interface().([]netip.Prefix) {
			l = append(l, fmt.Sprintf("%q", p.String()))
		}
		return "[" + strings.Join(l, ", ") + "]"
	}
	switch v.Kind() {
	case reflect.String:
		return fmt.Sprintf("%q", v.String())
	case reflect.Int64:
		return `"` + formatSize(v.Int()) + `"`
	case reflect.Slice:
		var l []string
		for i := 0; i < v.Len(); i++ {
			l = append(l, refValue(v.Index(i)))
		}
		return "[" + strings.Join(l, ", ") + "]"
	case reflect.Map:
		if v.Len() == 0 {
			return "{}"
		}
	}
	return fmt.Sprint(v.Interface())
}

// formatDuration writes d in the largest unit that divides it whole,
// seconds at most: "5s", "250ms", "90s".
func formatDuration(d time.Duration) string {
	for _, u := range []struct {
		name string
		d    time.Duration
	}{{"s", time.Second}, {"ms", time.Millisecond}, {"us", time.Microsecond}} {
		if d%u.d == 0 {
			return fmt.Sprintf("%d%s", d/u.d, u.name)
		}
	}
	return d.String()
}

// formatSize writes n in the largest binary unit that divides it whole:
// "1KiB", "16MiB", "0B".
func formatSize(n int64) string {
	for _, u := range []struct {
		name string
		n    int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.n == 0 {
			return fmt.Sprintf("%d%s", n/u.n, u.name)
		}
	}
	return fmt.Sprintf("%dB", n)
}
