package config

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"
)

// redacted replaces secrets in Redacted's copy.
const redacted = "(redacted)"

// Redacted returns a deep copy of c with secrets replaced by "(redacted)":
//   - every string that came from env() or file(), whole or in part
//     ("Bearer ${env("T")}"), wherever it went;
//   - Admin.Token and Store.Password;
//   - every Filter.Config other than "{}" and "null", whole (the copy holds
//     the JSON string "(redacted)");
//   - every header value: traces headers, proxy header_up and header_down,
//     respond and static headers (the names stay);
//   - the user info and the query of every URL (the traces endpoint, the
//     ACME directory, upstreams) and of every block's `path` (a health
//     check's), see RedactURL.
//
// File paths (certificate keys included) are not secrets and stay, unless
// they came from env() or file().
func (c *Config) Redacted() *Config {
	r := deepCopy(reflect.ValueOf(c)).Interface().(*Config)
	r.secrets = c.secrets
	if len(c.secrets) > 0 {
		redactSecrets(reflect.ValueOf(r).Elem(), c.secrets)
	}
	if r.Admin != nil && r.Admin.Token != "" {
		r.Admin.Token = redacted
	}
	if r.Store != nil && r.Store.Password != "" {
		r.Store.Password = redacted
	}
	for _, f := range r.Filters {
		if s := string(bytes.TrimSpace(f.Config)); s != "" && s != "{}" && s != "null" {
			f.Config = json.RawMessage(`"` + redacted + `"`)
		}
	}
	if t := r.Telemetry.Traces; t != nil {
		redactHeaders(t.Headers)
		t.Endpoint = RedactURL(t.Endpoint)
	}
	redactHeaders(r.Telemetry.Metrics.Headers)
	r.Telemetry.Metrics.Endpoint = RedactURL(r.Telemetry.Metrics.Endpoint)
	if l := r.Telemetry.Logs; l != nil {
		redactHeaders(l.Headers)
		l.Endpoint = RedactURL(l.Endpoint)
	}
	for _, s := range r.Sites {
		if s.TLS != nil && s.TLS.ACME != nil {
			s.TLS.ACME.Directory = RedactURL(s.TLS.ACME.Directory)
		}
		for _, rt := range s.Routes {
			for _, b := range rt.Blocks {
				redactBlock(reflect.ValueOf(b))
			}
		}
	}
	return r
}

// redactBlock applies the tags of a registered block's fields (see
// Block): a map tagged headers has its values replaced, a string tagged
// url goes through RedactURL; it recurses into child blocks and lists of
// them.
func redactBlock(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			redactBlock(v.Elem())
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			redactBlock(v.Index(i))
		}
	case reflect.Struct:
		for _, f := range schemaOf(v.Type()) {
			fv := v.Field(f.index)
			if !fv.CanSet() {
				continue
			}
			switch {
			case f.has("headers") && fv.Kind() == reflect.Map:
				if h, ok := fv.Interface().(map[string]string); ok {
					redactHeaders(h)
				}
			case (f.has("url") || f.name == "path") && fv.Kind() == reflect.String:
				// A request path (a health check's) may carry a key in
				// its query as a URL does.
				fv.SetString(RedactURL(fv.String()))
			case f.block || f.custom:
				redactBlock(fv)
			}
		}
	}
}

// redactHeaders replaces every value of h: any header may carry a
// credential, whatever its name.
func redactHeaders(h map[string]string) {
	for k := range h {
		h[k] = redacted
	}
}

// RedactURL returns s with its user info and its query replaced by
// "redacted" ("https://redacted@host/path?redacted"), for showing a URL
// from the config in /config or a log line. Scheme, host and path stay.
// A string that is not a URL but holds "@" or "?" is replaced whole.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		if strings.ContainsAny(s, "@?") {
			return redacted
		}
		return s
	}
	if u.User == nil && u.RawQuery == "" && !u.ForceQuery && u.Fragment == "" {
		return s
	}
	if u.User != nil {
		u.User = url.User("redacted")
	}
	if u.RawQuery != "" {
		u.RawQuery = "redacted"
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// redactSecrets replaces every string under v (a field, an element of a
// slice, a map value; not map keys) that is one of secrets.
func redactSecrets(v reflect.Value, secrets map[string]bool) {
	switch v.Kind() {
	case reflect.String:
		if secrets[v.String()] && v.CanSet() {
			v.SetString(redacted)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			redactSecrets(v.Elem(), secrets)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				redactSecrets(v.Field(i), secrets)
			}
		}
	case reflect.Slice:
		if v.Type() == rawType {
			return // filter configs: redacted whole
		}
		for i := 0; i < v.Len(); i++ {
			redactSecrets(v.Index(i), secrets)
		}
	case reflect.Map:
		// Map values cannot be set in place: redact a copy, store it back.
		for it := v.MapRange(); it.Next(); {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			redactSecrets(e, secrets)
			v.SetMapIndex(it.Key(), e)
		}
	}
}

// deepCopy copies v and everything it points to.
func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		n := reflect.New(v.Type().Elem())
		n.Elem().Set(deepCopy(v.Elem()))
		return n
	case reflect.Interface:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		n := reflect.New(v.Type()).Elem()
		n.Set(deepCopy(v.Elem()))
		return n
	case reflect.Struct:
		n := reflect.New(v.Type()).Elem()
		n.Set(v) // unexported fields (netip.Prefix's) as they are
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				n.Field(i).Set(deepCopy(v.Field(i)))
			}
		}
		return n
	case reflect.Slice:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		n := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := 0; i < v.Len(); i++ {
			n.Index(i).Set(deepCopy(v.Index(i)))
		}
		return n
	case reflect.Map:
		if v.IsNil() {
			return reflect.Zero(v.Type())
		}
		n := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			n.SetMapIndex(deepCopy(it.Key()), deepCopy(it.Value()))
		}
		return n
	}
	return v
}

// JSON returns the effective config as indented JSON: every setting with
// its default filled in, names as in HCL, durations as strings ("30s"),
// sizes in bytes, fields in declaration order and map keys sorted, so the
// output is deterministic. Source ranges are left out. Call it on
// Redacted() before showing it to anyone.
func (c *Config) JSON() ([]byte, error) {
	var buf bytes.Buffer
	if err := encodeJSON(&buf, reflect.ValueOf(c)); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, buf.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	rawType      = reflect.TypeFor[json.RawMessage]()
)

func encodeJSON(b *bytes.Buffer, v reflect.Value) error {
	switch v.Type() {
	case durationType:
		return encodeLeaf(b, time.Duration(v.Int()).String())
	case rawType:
		raw := bytes.TrimSpace(v.Bytes())
		if len(raw) == 0 {
			raw = []byte("null")
		}
		if !json.Valid(raw) {
			return fmt.Errorf("config: invalid JSON in raw value")
		}
		b.Write(raw)
		return nil
	}
	if v.Kind() != reflect.Pointer && v.Kind() != reflect.Interface && v.Type().Implements(textMarshalerType) {
		t, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return err
		}
		return encodeLeaf(b, string(t))
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			b.WriteString("null")
			return nil
		}
		return encodeJSON(b, v.Elem())
	case reflect.Struct:
		b.WriteByte('{')
		first := true
		member := func(name string, fv reflect.Value) error {
			if !first {
				b.WriteByte(',')
			}
			first = false
			if err := encodeLeaf(b, name); err != nil {
				return err
			}
			b.WriteByte(':')
			return encodeJSON(b, fv)
		}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			name, opts, ok := jsonName(f)
			if !ok || (opts == "omitempty" && v.Field(i).IsZero()) {
				continue
			}
			if opts == "inline" { // Route.Blocks: every registered kind
				for _, spec := range routeBlocks() {
					var e reflect.Value
					if !v.Field(i).IsNil() {
						e = v.Field(i).MapIndex(reflect.ValueOf(spec.kind))
					}
					if !e.IsValid() {
						e = reflect.Zero(v.Field(i).Type().Elem())
					}
					if err := member(spec.kind, e); err != nil {
						return err
					}
				}
				continue
			}
			if err := member(name, v.Field(i)); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	case reflect.Slice:
		b.WriteByte('[')
		for i := 0; i < v.Len(); i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encodeJSON(b, v.Index(i)); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(x, y reflect.Value) int {
			if x.Kind() == reflect.String {
				return strings.Compare(x.String(), y.String())
			}
			return int(x.Int() - y.Int())
		})
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encodeLeaf(b, fmt.Sprint(k.Interface())); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := encodeJSON(b, v.MapIndex(k)); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	}
	return encodeLeaf(b, v.Interface())
}

var textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()

// jsonName is the JSON name of a struct field: its json tag, else the
// NAME of its hcl tag (a registered block's field); ok is false for a
// field left out: unexported, tagged "-", a range, or without either tag.
func jsonName(f reflect.StructField) (name, opts string, ok bool) {
	if !f.IsExported() {
		return "", "", false
	}
	if tag, has := f.Tag.Lookup("json"); has {
		name, opts, _ = strings.Cut(tag, ",")
		if name == "-" {
			return "", "", false
		}
		if name == "" {
			name = f.Name
		}
		return name, opts, true
	}
	tag, has := f.Tag.Lookup("hcl")
	if !has {
		return "", "", false
	}
	name, opts, _ = strings.Cut(tag, ",")
	if name == "" || strings.Contains(","+opts+",", ",range,") {
		return "", "", false
	}
	return name, "", true
}

func encodeLeaf(b *bytes.Buffer, x any) error {
	j, err := json.Marshal(x)
	if err != nil {
		return err
	}
	b.Write(j)
	return nil
}
