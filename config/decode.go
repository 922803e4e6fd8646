package config

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// config decodes the top-level body.
func (d *decoder) config(b hcl.Body) *Config {
	top := d.content(b, "top-level", hcl.Range{}, nil,
		blockType("admin"), blockType("server"), labeled("listener", "address"),
		blockType("telemetry"), labeled("filter", "name"), labeled("site", "name"), labeled("store", "kind"))
	c := &Config{Server: defaultServer(), Telemetry: defaultTelemetry()}

	// Filter names first: routes may reference filters defined below them.
	for _, blk := range top.blocks {
		if blk.Type == "filter" && !contains(d.filterNames, blk.Labels[0]) {
			d.filterNames = append(d.filterNames, blk.Labels[0])
		}
	}
	if blk := top.single("admin"); blk != nil {
		c.Admin = d.admin(blk)
	}
	if blk := top.single("server"); blk != nil {
		c.Server = d.server(blk)
	}
	if blk := top.single("telemetry"); blk != nil {
		c.Telemetry = d.telemetry(blk)
	}
	if blk := top.single("store"); blk != nil {
		c.Store = d.store(blk)
		d.hasStore = true
	}
	seenListener := map[string]*Listener{}
	seenFilter := map[string]*Filter{}
	for _, blk := range top.blocks {
		switch blk.Type {
		case "listener":
			l := d.listener(blk)
			if first := seenListener[l.Address]; first != nil {
				d.errorf(l.Range, "Duplicate listener", "A listener block for %q is already defined at %s.", l.Address, pos(first.Range))
				continue
			}
			seenListener[l.Address] = l
			c.Listeners = append(c.Listeners, l)
		case "filter":
			f := d.filter(blk)
			if first := seenFilter[f.Name]; first != nil {
				d.errorf(f.Range, "Duplicate filter", "A filter named %q is already defined at %s.", f.Name, pos(first.Range))
				continue
			}
			seenFilter[f.Name] = f
			c.Filters = append(c.Filters, f)
		case "site":
			c.Sites = append(c.Sites, d.site(blk))
		}
	}
	unknownTop := false
	if sb, ok := b.(*hclsyntax.Body); ok {
		for _, blk := range sb.Blocks {
			unknownTop = unknownTop || !contains([]string{"admin", "server", "listener", "telemetry", "filter", "site", "store"}, blk.Type)
		}
	}
	// A misspelt site block is reported already; "no site" would be noise.
	if len(c.Sites) == 0 && !unknownTop {
		d.diags = append(d.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "No site",
			Detail:   `The config defines no site block, so the server would serve nothing; add one, like site "*" { route "/" { static { root = "." } } }.`,
			Subject:  b.MissingItemRange().Ptr(),
		})
	}
	d.check(c)
	// http3 needs TLS, which the sites decide (check computes l.TLS).
	for _, l := range c.Listeners {
		if l.HTTP3 && !l.TLS && len(l.Sites)+len(l.Redirects) > 0 {
			d.errorf(l.Range, "http3 on a plain address", "HTTP/3 always runs over TLS (QUIC); the sites on %q use plain HTTP. Add a tls block to them, or remove http3.", l.Address)
		}
	}
	return c
}

func defaultServer() Server {
	return Server{ShutdownTimeout: 30 * time.Second, ServerHeader: "sluice"}
}

func defaultTelemetry() Telemetry {
	return Telemetry{ServiceName: "sluice", Metrics: Metrics{Prometheus: true}}
}

func (d *decoder) admin(blk *hcl.Block) *Admin {
	b := d.content(blk.Body, "admin", blk.DefRange, []string{"listen", "token", "socket_mode"})
	a := &Admin{Listen: "127.0.0.1:2019", Range: blk.DefRange}
	unix := false
	if b.str("listen", &a.Listen) {
		if path, ok := strings.CutPrefix(a.Listen, "unix/"); ok {
			unix = true
			if !strings.HasPrefix(path, "/") {
				d.errorf(b.rng("listen"), "Invalid listen address", "%q names no absolute socket path; write \"unix//run/sluice/admin.sock\".", a.Listen)
			}
		} else if err := checkListenAddr(a.Listen); err != nil {
			d.errorf(b.rng("listen"), "Invalid listen address", "%s.", err)
		}
	}
	b.str("token", &a.Token)
	if b.str("socket_mode", &a.SocketMode) {
		mode := a.SocketMode
		m, err := strconv.ParseUint(mode, 8, 32)
		switch {
		case !unix:
			d.errorf(b.rng("socket_mode"), "Invalid socket_mode", "socket_mode applies to a unix socket (listen = \"unix/PATH\"), not to %q.", a.Listen)
		case err != nil || m > 0o777 || m == 0:
			d.errorf(b.rng("socket_mode"), "Invalid socket_mode", "socket_mode %q is not a file mode in octal from \"0001\" to \"0777\", like \"0600\".", mode)
		}
	}
	return a
}

// store decodes the `store "redis" {}` block.
func (d *decoder) store(blk *hcl.Block) *Store {
	st := &Store{Kind: blk.Labels[0], Prefix: "sluice:", Timeout: 250 * time.Millisecond, Range: blk.DefRange}
	if st.Kind != "redis" {
		d.errorf(blk.LabelRanges[0], "Unknown store", "store %q is not a kind sluice knows; the one kind is \"redis\".%s", st.Kind, didYouMean(st.Kind, []string{"redis"}))
	}
	b := d.content(blk.Body, fmt.Sprintf("store %q", st.Kind), blk.DefRange,
		[]string{"address", "username", "password", "prefix", "timeout", "required"}, blockType("tls"))
	if b.require("address") && b.str("address", &st.Address) {
		if host, port, err := net.SplitHostPort(st.Address); err != nil || host == "" {
			d.errorf(b.rng("address"), "Invalid address", "%q is not a host:port, like \"127.0.0.1:6379\".", st.Address)
		} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			d.errorf(b.rng("address"), "Invalid address", "port %q of %q is not a number from 1 to 65535.", port, st.Address)
		}
	}
	b.str("username", &st.Username)
	b.str("password", &st.Password)
	b.str("prefix", &st.Prefix)
	b.duration("timeout", &st.Timeout, true)
	b.boolean("required", &st.Required)
	if tb := b.single("tls"); tb != nil {
		st.TLS = d.clientTLS(tb)
	}
	return st
}

// clientTLS decodes the `tls {}` block of a connection sluice makes: to
// an upstream, to the store.
func (d *decoder) clientTLS(tb *hcl.Block) *UpstreamTLS {
	t := &UpstreamTLS{}
	d.decodeBlock(tb, "tls", t)
	return t
}

func (d *decoder) server(blk *hcl.Block) Server {
	b := d.content(blk.Body, "server", blk.DefRange, []string{"shutdown_timeout", "shutdown_delay", "cache_dir", "server_header"})
	s := defaultServer()
	s.Range = blk.DefRange
	b.duration("shutdown_timeout", &s.ShutdownTimeout, false)
	b.duration("shutdown_delay", &s.ShutdownDelay, false)
	b.path("cache_dir", &s.CacheDir)
	if b.str("server_header", &s.ServerHeader) && !validFieldValue(s.ServerHeader) {
		d.errorf(b.rng("server_header"), "Invalid server_header", "server_header %q is not a header value: at most 256 printable characters, no control characters, no leading or trailing space; write \"\" to send no Server header.", s.ServerHeader)
	}
	return s
}

// defaultListener returns the settings of a listener without a block.
func defaultListener(addr string) *Listener {
	return &Listener{
		Address:           addr,
		ReadTimeout:       60 * time.Second,
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    16 << 10,
		MaxRequestBody:    16 << 20,
		MaxConns:          16384,
		HTTP2Engine:       "sluice",
		Implicit:          true,
	}
}

func (d *decoder) listener(blk *hcl.Block) *Listener {
	b := d.content(blk.Body, fmt.Sprintf("listener %q", blk.Labels[0]), blk.DefRange, []string{
		"read_timeout", "read_header_timeout", "write_timeout", "idle_timeout",
		"max_header_bytes", "max_request_body", "max_conns", "h2c", "http3", "tcp_nopush", "http2_engine", "trusted_proxies"})
	l := defaultListener(blk.Labels[0])
	l.Implicit = false
	l.Range = blk.LabelRanges[0]
	if err := checkListenAddr(l.Address); err != nil {
		d.errorf(l.Range, "Invalid listen address", "%s.", err)
	}
	b.duration("read_timeout", &l.ReadTimeout, false)
	b.duration("read_header_timeout", &l.ReadHeaderTimeout, false)
	b.duration("write_timeout", &l.WriteTimeout, false)
	b.duration("idle_timeout", &l.IdleTimeout, false)
	if b.size("max_header_bytes", &l.MaxHeaderBytes) && l.MaxHeaderBytes < 1024 {
		d.errorf(b.rng("max_header_bytes"), "Invalid size", "max_header_bytes must be at least 1KiB.")
	}
	b.size("max_request_body", &l.MaxRequestBody)
	b.integer("max_conns", &l.MaxConns, 0, math.MaxInt32)
	b.boolean("h2c", &l.H2C)
	b.boolean("http3", &l.HTTP3)
	b.boolean("tcp_nopush", &l.TCPNoPush)
	b.oneOf("http2_engine", &l.HTTP2Engine, "sluice", "std")
	if ranges, ok := b.strList("trusted_proxies", &l.TrustedProxies); ok {
		for i, c := range l.TrustedProxies {
			if err := checkCIDR(c); err != nil {
				d.errorf(ranges[i], "Invalid address", "%s.", err)
			}
		}
	}
	return l
}

func (d *decoder) telemetry(blk *hcl.Block) Telemetry {
	b := d.content(blk.Body, "telemetry", blk.DefRange, []string{"service_name"},
		blockType("traces"), blockType("metrics"), blockType("access_log"), blockType("logs"))
	t := defaultTelemetry()
	if b.str("service_name", &t.ServiceName) && t.ServiceName == "" {
		d.errorf(b.rng("service_name"), "Empty service_name", "service_name must not be empty.")
	}
	if tb := b.single("traces"); tb != nil {
		x := d.content(tb.Body, "traces", tb.DefRange, []string{"endpoint", "protocol", "headers", "sample_ratio"})
		tr := &Traces{Protocol: "http/protobuf", SampleRatio: 1, Headers: map[string]string{}, Range: tb.DefRange}
		if x.require("endpoint") {
			d.otlp(x, &tr.Endpoint, &tr.Protocol, &tr.Headers)
		}
		x.float("sample_ratio", &tr.SampleRatio, 0, 1)
		t.Traces = tr
	}
	if mb := b.single("metrics"); mb != nil {
		x := d.content(mb.Body, "metrics", mb.DefRange, []string{"prometheus", "endpoint", "protocol", "headers", "interval"})
		x.boolean("prometheus", &t.Metrics.Prometheus)
		m := &t.Metrics
		m.Protocol, m.Headers, m.Interval = "http/protobuf", map[string]string{}, 60*time.Second
		d.otlp(x, &m.Endpoint, &m.Protocol, &m.Headers)
		x.duration("interval", &m.Interval, true)
		if m.Endpoint == "" {
			for _, name := range []string{"protocol", "headers", "interval"} {
				if x.attrs[name] != nil {
					d.errorf(x.rng(name), "OTLP setting without endpoint", "%s applies to the OTLP export of metrics, which needs an endpoint (like \"http://127.0.0.1:4318\").", name)
				}
			}
			m.Protocol, m.Headers, m.Interval = "", nil, 0
		}
	}
	if lb := b.single("logs"); lb != nil {
		x := d.content(lb.Body, "logs", lb.DefRange, []string{"endpoint", "protocol", "headers", "level"})
		l := &Logs{Protocol: "http/protobuf", Headers: map[string]string{}, Level: "info", Range: lb.DefRange}
		if x.require("endpoint") {
			d.otlp(x, &l.Endpoint, &l.Protocol, &l.Headers)
		}
		x.oneOf("level", &l.Level, "debug", "info", "warn", "error")
		t.Logs = l
	}
	if ab := b.single("access_log"); ab != nil {
		x := d.content(ab.Body, "access_log", ab.DefRange, []string{"format", "output", "fields"})
		al := &AccessLog{Format: "json", Output: "stderr", Range: ab.DefRange}
		x.oneOf("format", &al.Format, "json", "clf")
		if x.has("fields") && x.subset("fields", &al.Fields, AccessLogFields...) {
			if al.Fields == nil {
				al.Fields = []string{} // CLF's own fields only
			}
			if len(al.Fields) == 0 && al.Format == "json" {
				d.errorf(x.rng("fields"), "Empty fields", "A JSON access log needs at least one field; leave fields out for the default ones.")
			}
		}
		if x.str("output", &al.Output) {
			switch al.Output {
			case "stderr", "stdout":
			case "":
				d.errorf(x.rng("output"), "Empty output", `output must be "stderr", "stdout" or a file path.`)
			default:
				written := al.Output
				al.Output = d.resolve(written)
				if fi, err := os.Stat(path.Dir(al.Output)); err != nil || !fi.IsDir() {
					d.errorf(x.rng("output"), "Invalid output", "The directory of the access log %q does not exist.", written)
				}
			}
		}
		t.AccessLog = al
	}
	return t
}

// defaultFilter returns a filter's defaults.
func defaultFilter(name string) *Filter {
	return &Filter{Name: name, Config: []byte("{}"), Timeout: 100 * time.Millisecond, InitTimeout: 10 * time.Second, Memory: 16 << 20, MaxBuffer: 1 << 20, Reset: "never"}
}

const wasmPage = 64 << 10

func (d *decoder) filter(blk *hcl.Block) *Filter {
	f := defaultFilter(blk.Labels[0])
	f.Range = blk.LabelRanges[0]
	b := d.content(blk.Body, fmt.Sprintf("filter %q", f.Name), blk.DefRange,
		[]string{"module", "config", "timeout", "init_timeout", "body_timeout", "memory", "max_buffer", "reset"}, blockType("pool"))
	if f.Name == "" {
		d.errorf(f.Range, "Empty filter name", "A filter needs a name.")
	}
	var written string
	if b.require("module") && b.str("module", &written) {
		f.ModuleRange = b.rng("module")
		f.Module = d.resolve(written)
		if written == "" {
			d.errorf(f.ModuleRange, "Empty path", "module must name a .wasm file.")
		} else if fi, err := os.Stat(f.Module); err != nil {
			d.errorf(f.ModuleRange, "Cannot read module", "%q: %s (paths are relative to the config file's directory).", written, ioReason(err))
		} else if !fi.Mode().IsRegular() {
			d.errorf(f.ModuleRange, "Cannot read module", "%q is not a file.", written)
		}
	}
	f.ConfigRange = f.Range
	if v, ok := b.value("config"); ok {
		f.ConfigRange = b.rng("config")
		j, err := ctyjson.SimpleJSONValue{Value: v}.MarshalJSON()
		if err != nil {
			d.errorf(b.rng("config"), "Invalid config", "The filter config cannot be encoded as JSON: %s.", err)
		} else {
			f.Config = j
		}
	}
	b.duration("timeout", &f.Timeout, true)
	b.duration("init_timeout", &f.InitTimeout, true)
	b.duration("body_timeout", &f.BodyTimeout, true)
	if b.size("memory", &f.Memory) {
		switch {
		case f.Memory < wasmPage:
			d.errorf(b.rng("memory"), "Invalid size", "memory must be at least one 64KiB Wasm page.")
		case f.Memory > 4<<30:
			d.errorf(b.rng("memory"), "Invalid size", "memory must be at most 4GiB, the limit of 32-bit Wasm.")
		}
		f.Memory = (f.Memory + wasmPage - 1) / wasmPage * wasmPage
	}
	if b.size("max_buffer", &f.MaxBuffer) && f.MaxBuffer > 1<<30 {
		d.errorf(b.rng("max_buffer"), "Invalid size", "max_buffer must be at most 1GiB; a filter that needs more should read the body in pieces without buffer_request.")
	}
	b.oneOf("reset", &f.Reset, "never", "request")
	if pb := b.single("pool"); pb != nil {
		x := d.content(pb.Body, "pool", pb.DefRange, []string{"size"})
		x.integer("size", &f.Pool.Size, 0, 1<<16)
	}
	return f
}

func (d *decoder) site(blk *hcl.Block) *Site {
	s := &Site{Name: blk.Labels[0], Range: blk.LabelRanges[0], Aliases: []string{}, HTTPSRedirect: []string{}, ErrorPages: map[int]string{}}
	m := &siteMeta{listen: map[string]hcl.Range{}, redirect: map[string]hcl.Range{}, defaultRange: s.Range}
	d.meta[s] = m
	m.names = append(m.names, nameRef{s.Name, s.Range})
	b := d.content(blk.Body, fmt.Sprintf("site %q", s.Name), blk.DefRange,
		[]string{"aliases", "listen", "default", "https_redirect", "hsts", "error_pages"},
		blockType("tls"), labeled("route", "path"))
	if err := checkSiteName(s.Name); err != nil {
		d.errorf(s.Range, "Invalid site name", "%s.", err)
	}
	if ranges, ok := b.strList("aliases", &s.Aliases); ok {
		for i, a := range s.Aliases {
			if err := checkSiteName(a); err != nil {
				d.errorf(ranges[i], "Invalid alias", "%s.", err)
			}
			m.names = append(m.names, nameRef{a, ranges[i]})
		}
	}
	if tb := b.single("tls"); tb != nil {
		s.TLS = d.tls(tb, s)
	}
	if s.TLS != nil {
		s.Listen = []string{":8443"}
	} else {
		s.Listen = []string{":8080"}
	}
	if ranges, ok := d.addrList(b, "listen", &s.Listen); ok {
		for i, a := range s.Listen {
			m.listen[a] = ranges[i]
		}
	} else {
		m.listen[s.Listen[0]] = s.Range
	}
	if b.boolean("default", &s.Default) {
		m.defaultRange = b.attrs["default"].Range
	}
	ranges, ok := d.addrList(b, "https_redirect", &s.HTTPSRedirect)
	for i, a := range s.HTTPSRedirect {
		m.redirect[a] = ranges[i]
	}
	if ok && len(s.HTTPSRedirect) > 0 && s.TLS == nil {
		d.errorf(b.rng("https_redirect"), "https_redirect without tls",
			"Site %q redirects to https but has no tls block to serve it.", s.Name)
	}
	if b.str("hsts", &s.HSTS) {
		if err := checkHeaderValue(s.HSTS, d.isSecret(s.HSTS)); err != nil {
			d.errorf(b.rng("hsts"), "Invalid hsts", "%s.", err)
		}
	}
	if ranges, ok := b.statusMap("error_pages", &s.ErrorPages); ok {
		for code, p := range s.ErrorPages {
			full := d.resolve(p)
			if fi, err := os.Stat(full); err != nil || !fi.Mode().IsRegular() {
				reason := "not a file"
				if err != nil {
					reason = ioReason(err)
				}
				d.errorf(ranges[code], "Missing error page", "The error page for %d, %q: %s.", code, p, reason)
			}
			s.ErrorPages[code] = full
		}
	}
	seen := map[string]*Route{}
	for _, rb := range b.blocks {
		if rb.Type != "route" {
			continue
		}
		r := d.route(rb)
		if first := seen[r.Path]; first != nil {
			d.errorf(r.Range, "Duplicate route", "Site %q already has a route %q at %s; this one could never match.", s.Name, r.Path, pos(first.Range))
			continue
		}
		seen[r.Path] = r
		s.Routes = append(s.Routes, r)
	}
	if len(seen) == 0 {
		d.errorf(s.Range, "Site without routes", `Site %q has no route block, so it would answer every request with 404; add one, like route "/" { static { root = "public" } }.`, s.Name)
	}
	return s
}

// addrList reads a list of listen addresses, checking each and rejecting
// repeats.
func (d *decoder) addrList(b *body, name string, dst *[]string) ([]hcl.Range, bool) {
	var l []string
	ranges, ok := b.strList(name, &l)
	if !ok {
		return nil, false
	}
	good := true
	seen := map[string]bool{}
	for i, a := range l {
		if err := checkListenAddr(a); err != nil {
			d.errorf(ranges[i], "Invalid listen address", "%s.", err)
			good = false
		} else if seen[a] {
			d.errorf(ranges[i], "Duplicate address", "%q is listed twice in %s.", a, name)
			good = false
		}
		seen[a] = true
	}
	if name == "listen" && len(l) == 0 {
		d.errorf(b.rng(name), "Empty listen", "listen needs at least one address; leave it out for the default.")
		good = false
	}
	if !good {
		return nil, false
	}
	*dst = l
	return ranges, true
}

func (d *decoder) tls(blk *hcl.Block, s *Site) *TLS {
	t := &TLS{MinVersion: "1.2", Range: blk.DefRange}
	b := d.content(blk.Body, "tls", blk.DefRange,
		[]string{"cert", "key", "client_auth", "client_ca", "client_cert_header", "min_version"}, blockType("acme"))
	d.file(b, "cert", &t.Cert)
	d.file(b, "key", &t.Key)
	switch {
	case b.has("cert") && !b.has("key"):
		d.errorf(b.attrs["cert"].Range, "Certificate without key", "tls has cert but no key; add key = \"key.pem\" next to it.")
	case b.has("key") && !b.has("cert"):
		d.errorf(b.attrs["key"].Range, "Key without certificate", "tls has key but no cert; add cert = \"cert.pem\" next to it.")
	}
	if ab := b.single("acme"); ab != nil {
		x := d.content(ab.Body, "acme", ab.DefRange, []string{"email", "directory", "challenges", "storage"})
		a := &ACME{Directory: DefaultACMEDirectory, Challenges: []string{"tls-alpn-01", "http-01"}}
		if x.str("email", &a.Email) && a.Email != "" && !strings.Contains(a.Email, "@") {
			d.errorf(x.rng("email"), "Invalid email", "%q is not an email address.", a.Email)
		}
		if x.str("directory", &a.Directory) {
			if u, err := url.Parse(a.Directory); err != nil || u.Scheme != "https" || u.Host == "" {
				d.errorf(x.rng("directory"), "Invalid directory", "%q is not an https:// URL of an ACME directory.", RedactURL(a.Directory))
			}
		}
		if x.subset("challenges", &a.Challenges, "tls-alpn-01", "http-01") && len(a.Challenges) == 0 {
			d.errorf(x.rng("challenges"), "No challenges", "challenges needs at least one of \"tls-alpn-01\", \"http-01\".")
		}
		x.path("storage", &a.Storage)
		if b.has("cert") || b.has("key") {
			d.errorf(ab.DefRange, "Both acme and cert", "tls takes either cert and key, or an acme block, not both.")
		}
		for _, n := range append([]string{s.Name}, s.Aliases...) {
			if n == "*" || n == "_" || strings.HasPrefix(n, "*.") {
				d.errorf(ab.DefRange, "ACME for a wildcard name", "ACME cannot obtain a certificate for %q (wildcards need the dns-01 challenge, which sluice does not offer); use cert and key.", n)
				break
			}
		}
		t.ACME = a
	} else if !b.has("cert") && !b.has("key") {
		d.errorf(blk.DefRange, "TLS without certificate", "tls needs cert and key, or an acme block, like tls { acme { email = \"ops@example.com\" } }.")
	}
	b.oneOf("client_auth", &t.ClientAuth, "", "require", "verify_if_given")
	d.file(b, "client_ca", &t.ClientCA)
	if t.ClientAuth != "" && !b.has("client_ca") {
		d.errorf(b.rng("client_auth"), "client_auth without client_ca", "client_auth = %q needs client_ca, the PEM bundle client certificates are verified against.", t.ClientAuth)
	}
	if b.str("client_cert_header", &t.ClientCertHeader) {
		if err := checkHeaderName(t.ClientCertHeader); err != nil {
			d.errorf(b.rng("client_cert_header"), "Invalid header name", "client_cert_header: %v.", err)
		} else if t.ClientAuth == "" {
			d.errorf(b.rng("client_cert_header"), "client_cert_header without client_auth", "client_cert_header needs client_auth = \"require\" or \"verify_if_given\": without client certificates there is no identity to send.")
		}
	}
	b.oneOf("min_version", &t.MinVersion, "1.2", "1.3")
	t.CertRange, t.KeyRange, t.ClientCARange = b.rng("cert"), b.rng("key"), b.rng("client_ca")
	return t
}

// file reads a path attribute that must name a readable file.
func (d *decoder) file(b *body, name string, dst *string) bool {
	var written string
	if !b.str(name, &written) {
		return false
	}
	full := d.resolve(written)
	if written == "" {
		d.errorf(b.rng(name), "Empty path", "%s must name a file.", name)
		return false
	}
	fi, err := os.Stat(full)
	if err == nil && !fi.Mode().IsRegular() {
		d.errorf(b.rng(name), "Not a file", "%s %q is not a file.", name, written)
		return false
	}
	if err == nil {
		var f *os.File
		f, err = os.Open(full)
		if err == nil {
			f.Close()
		}
	}
	if err != nil {
		d.errorf(b.rng(name), "Cannot read file", "%s %q: %s (paths are relative to the config file's directory).", name, written, ioReason(err))
		return false
	}
	*dst = full
	return true
}

func (d *decoder) route(blk *hcl.Block) *Route {
	r := &Route{Path: blk.Labels[0], Range: blk.LabelRanges[0], Filters: []string{}, Blocks: map[string]Block{}, Allow: []string{}, Deny: []string{}}
	var blocks []hcl.BlockHeaderSchema
	for _, spec := range routeBlocks() {
		blocks = append(blocks, blockType(spec.kind))
	}
	b := d.content(blk.Body, fmt.Sprintf("route %q", r.Path), blk.DefRange,
		[]string{"filters", "allow", "deny"}, blocks...)
	var handlerRange hcl.Range
	if err := checkRoutePath(r.Path); err != nil {
		d.errorf(r.Range, "Invalid route path", "%s.", err)
	}
	if ranges, ok := b.strList("filters", &r.Filters); ok {
		seen := map[string]bool{}
		for i, name := range r.Filters {
			switch {
			case !contains(d.filterNames, name):
				hint := didYouMean(name, d.filterNames)
				if hint == "" && len(d.filterNames) > 0 {
					hint = " The filters defined are " + quoteJoin(d.filterNames, "and") + "."
				} else if hint == "" {
					hint = " Define it with a filter \"" + name + "\" { module = \"...\" } block."
				}
				d.errorf(ranges[i], "Unknown filter", "No filter block is named %q.%s", name, hint)
			case seen[name]:
				d.errorf(ranges[i], "Duplicate filter", "Filter %q is listed twice in this route.", name)
			}
			seen[name] = true
		}
	}
	for _, name := range []string{"allow", "deny"} {
		dst := &r.Allow
		if name == "deny" {
			dst = &r.Deny
		}
		if ranges, ok := b.strList(name, dst); ok {
			for i, c := range *dst {
				if err := checkCIDR(c); err != nil {
					d.errorf(ranges[i], "Invalid address", "%s.", err)
				}
			}
		}
	}
	for _, hb := range b.blocks {
		spec := registeredBlock(hb.Type)
		if spec == nil {
			continue
		}
		if spec.handler {
			if r.Kind != "" {
				d.errorf(hb.DefRange, "Two handlers in one route",
					"Route %q already has a %s handler at %s; a route has exactly one of %s.", r.Path, r.Kind, pos(handlerRange), plainJoin(handlerKinds(), "and"))
				continue
			}
			r.Kind, handlerRange = hb.Type, hb.DefRange
		} else if r.Blocks[hb.Type] != nil {
			continue // b.single reports the repeat
		}
		v := spec.defaults()
		d.decodeBlock(hb, hb.Type, v)
		r.Blocks[hb.Type] = v
	}
	for _, spec := range routeBlocks() {
		if !spec.handler {
			b.single(spec.kind) // reports a second one
		}
	}
	if kinds := handlerKinds(); r.Kind == "" && len(kinds) == 0 {
		d.errorf(r.Range, "No handlers", "This program registered no handler block (a Go program that loads configs imports github.com/sluicehq/sluice/host/handlers).")
	} else if r.Kind == "" {
		d.errorf(r.Range, "Route without handler", "Route %q has no handler; add one of %s.", r.Path, plainJoin(kinds, "or"))
	}
	return r
}

// checkRoutePath reports a route path that could never match.
func checkRoutePath(p string) error {
	switch {
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("route path %q must start with \"/\", like \"/%s\"", p, strings.TrimLeft(p, "./"))
	case strings.ContainsAny(p, "?#"):
		return fmt.Errorf("route path %q must not have a query or fragment; routes match the path only", p)
	case strings.Contains(p, "//"):
		return fmt.Errorf("route path %q has an empty segment (\"//\"); request paths are cleaned, so it could never match", p)
	case strings.ContainsAny(p, " \t\r\n\x00"):
		return fmt.Errorf("route path %q contains white space or control characters; write them percent-encoded", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." || seg == "." {
			return fmt.Errorf("route path %q has a %q segment; request paths are cleaned, so it could never match", p, seg)
		}
	}
	return nil
}

// validFieldValue reports whether v may be sent as a response field's
// value as it is: printable, space and tab inside only, bounded.
func validFieldValue(v string) bool {
	if len(v) > 256 || strings.TrimSpace(v) != v {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// otlp reads an OTLP exporter's endpoint, protocol and headers, the same
// attributes in traces, metrics and logs.
func (d *decoder) otlp(x *body, endpoint, protocol *string, headers *map[string]string) {
	if x.str("endpoint", endpoint) {
		u, err := url.Parse(*endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			d.errorf(x.rng("endpoint"), "Invalid endpoint", "%q is not an http:// or https:// URL of an OTLP collector, like \"http://127.0.0.1:4318\".", RedactURL(*endpoint))
		}
	}
	x.oneOf("protocol", protocol, "http/protobuf", "grpc")
	x.headers("headers", headers)
}
