package proxy

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/sluicehq/sluice/config"
)

// The `proxy {}` block of a route decodes into Options: its schema is
// the hcl tags of Options and of the types of its child blocks, its
// defaults are Defaults, and DecodeHCL below checks what the tags cannot
// say. Adding an attribute is a tagged field of Options, its default in
// Defaults when it is not the zero value, and its use.
func init() {
	config.RegisterHandler("proxy", func() config.Block { return Defaults() })
}

// DecodeHCL decodes the upstreams and checks what spans attributes; the
// tagged fields are decoded already (see config.Block).
func (o *Options) DecodeHCL(b *config.Body) {
	seen := map[string]hcl.Range{}
	add := func(u Upstream, rng hcl.Range) {
		if err := checkUpstream(u.URL); err != nil {
			b.Errorf(rng, "Invalid upstream", "%s.", err)
			return
		}
		if first, ok := seen[u.URL]; ok {
			b.Errorf(rng, "Duplicate upstream", "Upstream %q is already listed at %s; use weight to send it more traffic.", u.URL, config.Pos(first))
			return
		}
		seen[u.URL] = rng
		o.Upstreams = append(o.Upstreams, u)
	}
	var urls []string
	if ranges, ok := b.Strings("upstreams", &urls); ok {
		for i, u := range urls {
			add(Upstream{URL: u, Weight: 1}, ranges[i])
		}
	}
	blocks := b.Blocks("upstream")
	for _, ub := range blocks {
		u := Upstream{Weight: 1}
		b.Decode(ub, fmt.Sprintf("upstream %q", ub.Labels[0]), &u)
		add(u, ub.LabelRanges[0])
	}
	switch {
	case !b.Has("upstreams") && len(blocks) == 0:
		b.Errorf(b.DefRange(), "Proxy without upstreams", "proxy needs upstreams = [\"http://127.0.0.1:9000\"] or an upstream \"URL\" {} block.")
	case b.Has("upstreams") && urls != nil && len(urls) == 0 && len(blocks) == 0:
		b.Errorf(b.Range("upstreams"), "Proxy without upstreams", "upstreams is empty; list at least one URL.")
	}
	if o.Balance == "header_hash" && o.HashHeader == "" {
		b.Errorf(b.Range("balance"), "Missing hash_header", "balance = \"header_hash\" needs hash_header, the request header to hash.")
	}
	if b.Has("cookie") && (o.Cookie == "" || strings.ContainsAny(o.Cookie, " ;,=\t\r\n\"")) {
		b.Errorf(b.Range("cookie"), "Invalid cookie name", "%q is not a cookie name.", o.Cookie)
	}
	if o.StripPrefix != "" && !strings.HasPrefix(o.StripPrefix, "/") {
		b.Errorf(b.Range("strip_prefix"), "Invalid strip_prefix", "strip_prefix %q must start with \"/\".", o.StripPrefix)
	}
	if b.Has("host_header") && checkHostHeader(o.HostHeader) != nil {
		b.Errorf(b.Range("host_header"), "Invalid host_header", "host_header must be \"upstream\", \"keep\" or a host name, not %q.", o.HostHeader)
	}
}

// DecodeHCL checks the health block's path.
func (h *HealthCheck) DecodeHCL(b *config.Body) {
	if b.Has("path") && !strings.HasPrefix(h.Path, "/") {
		b.Errorf(b.Range("path"), "Invalid health path", "path %q must start with \"/\".", h.Path)
	}
}

// checkHostHeader accepts "upstream", "keep" (or "", the default) and a
// host name, with or without a port.
func checkHostHeader(hh string) error {
	switch hh {
	case "", "upstream", "keep":
		return nil
	}
	if config.CheckHostName(hh) != nil && config.CheckHostPort(hh) != nil {
		return fmt.Errorf("host_header %q: want \"upstream\", \"keep\" or a host name", hh)
	}
	return nil
}

// literalHost is a HeaderUp that sends the literal host_header name as
// Host (the proxy sends a Host set by HeaderUp as it is), unless ops sets
// Host itself. ops is not modified.
func literalHost(ops *HeaderOps, name string) *HeaderOps {
	out := &HeaderOps{}
	if ops != nil {
		*out = *ops
		for k := range ops.Set {
			if http.CanonicalHeaderKey(k) == "Host" {
				return ops
			}
		}
	}
	out.Set = maps.Clone(out.Set)
	if out.Set == nil {
		out.Set = map[string]string{}
	}
	out.Set["Host"] = name
	return out
}

// checkUpstream reports what is wrong with an upstream URL.
func checkUpstream(raw string) error {
	s := config.RedactURL(raw) // messages reach logs and the reload answer
	if !strings.Contains(s, "://") {
		return fmt.Errorf("upstream %q has no scheme; write \"http://%s\"", s, s)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL; write one like \"http://127.0.0.1:9000\"", s)
	}
	switch u.Scheme {
	case "http", "https", "h2c":
	default:
		return fmt.Errorf("upstream %q has scheme %q; use \"http\", \"https\" or \"h2c\"", s, u.Scheme)
	}
	switch {
	case u.Host == "":
		return fmt.Errorf("upstream %q has no host", s)
	case u.User != nil:
		return fmt.Errorf("upstream %q must not carry user info; set an Authorization header with header_up", s)
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "":
		return fmt.Errorf("upstream %q must not have a path or query; use strip_prefix or a filter to rewrite paths", s)
	}
	if p := u.Port(); p != "" {
		if err := config.CheckHostPort(u.Host); err != nil {
			return fmt.Errorf("upstream %q: %w", s, err)
		}
	}
	return nil
}
