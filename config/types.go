package config

import (
	"encoding/json"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// Config is one loaded, defaulted and validated configuration file. It is
// immutable: nothing may modify a Config after Load, Parse or Default returns
// it; Redacted returns a modified copy.
//
// JSON field names match the HCL names. Ranges (fields named Range or
// ending in Range) point into the source file for diagnostics and are not
// part of the JSON form.
type Config struct {
	// File is the absolute path of the loaded file; "" for Default.
	File string `json:"file"`
	// Admin is the `admin {}` block; nil means no admin listener.
	Admin *Admin `json:"admin"`
	// Server is the `server {}` block (optional): process-wide settings.
	Server Server `json:"server"`
	// Listeners holds the `listener "ADDR" {}` blocks plus one implicit
	// entry, with defaults, for every address that a site listens on or
	// redirects from and that has no block. Sorted by address.
	Listeners []*Listener `json:"listeners"`
	// Telemetry is the `telemetry {}` block (optional).
	Telemetry Telemetry `json:"telemetry"`
	// Filters holds the `filter "NAME" {}` blocks in file order.
	Filters []*Filter `json:"filters"`
	// Sites holds the `site "NAME" {}` blocks in file order.
	Sites []*Site `json:"sites"`
	// Store is the `store "redis" {}` block: state shared with other
	// sluice instances (rate limits, ACME certificates). nil means every
	// instance keeps its own, on its own machine.
	Store *Store `json:"store,omitempty"`

	// secrets holds every string that came from env() or file(), whole
	// or in part, as stored in the fields above: Redacted hides them.
	secrets map[string]bool
}

// Filter returns the filter named name, or nil.
func (c *Config) Filter(name string) *Filter {
	for _, f := range c.Filters {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// Listener returns the listener for addr (as written in the config, for
// example ":8080"), or nil.
func (c *Config) Listener(addr string) *Listener {
	for _, l := range c.Listeners {
		if l.Address == addr {
			return l
		}
	}
	return nil
}

// Site returns the site named name (compared case-insensitively), or nil.
func (c *Config) Site(name string) *Site {
	for _, s := range c.Sites {
		if equalFold(s.Name, name) {
			return s
		}
	}
	return nil
}

// Server holds process-wide settings: the `server {}` block.
type Server struct {
	// ShutdownTimeout bounds how long SIGTERM/SIGINT wait for in-flight
	// requests to drain before the process exits. HCL `shutdown_timeout`,
	// default "30s"; "0s" waits forever.
	ShutdownTimeout time.Duration `json:"shutdown_timeout"`
	// ShutdownDelay is how long /readyz answers 503 after SIGTERM/SIGINT
	// before the listeners stop accepting, so that load balancers stop
	// sending first. HCL `shutdown_delay`, default "0s" (no delay).
	ShutdownDelay time.Duration `json:"shutdown_delay"`
	// CacheDir is the directory of the on-disk Wasm compilation cache,
	// resolved against the config file's directory. HCL `cache_dir`,
	// default "" meaning "<user cache dir>/sluice".
	CacheDir string `json:"cache_dir"`
	// ServerHeader is the Server response field of every response on
	// every engine, unless the handler (an upstream's own Server, a
	// header_down, a filter) set one. HCL `server_header`, default
	// "sluice", without the version (as nginx's server_tokens off); ""
	// sends none.
	ServerHeader string `json:"server_header"`
	// Range is the `server` block's header, or the zero Range when absent.
	Range hcl.Range `json:"-"`
}

// Listener holds the settings of one listening address: the
// `listener "ADDR" {}` block, or the defaults for an address without one.
type Listener struct {
	// Address is the block label: "host:port", host empty (all interfaces),
	// an IP address or a name, port 1-65535.
	Address string `json:"address"`
	// ReadTimeout bounds reading a whole request, body included. HCL
	// `read_timeout`, default "60s"; "0s" means no limit.
	ReadTimeout time.Duration `json:"read_timeout"`
	// ReadHeaderTimeout bounds reading the request headers. HCL
	// `read_header_timeout`, default "10s"; "0s" means no limit.
	ReadHeaderTimeout time.Duration `json:"read_header_timeout"`
	// WriteTimeout bounds writing a response. HCL `write_timeout`, default
	// "60s"; "0s" means no limit.
	WriteTimeout time.Duration `json:"write_timeout"`
	// IdleTimeout bounds how long a keep-alive connection waits for the
	// next request. HCL `idle_timeout`, default "120s"; "0s" means no limit.
	IdleTimeout time.Duration `json:"idle_timeout"`
	// MaxHeaderBytes is the largest request head (request line and
	// headers) accepted; larger gets 431. HCL `max_header_bytes`, a size,
	// default "16KiB".
	MaxHeaderBytes int64 `json:"max_header_bytes"`
	// MaxRequestBody is the largest request body accepted; larger gets
	// 413. HCL `max_request_body`, a size, default "16MiB"; "0B" means no
	// limit. A proxy route's max_body overrides it.
	MaxRequestBody int64 `json:"max_request_body"`
	// MaxConns bounds concurrent connections on this address; further
	// connections wait in the accept queue. HCL `max_conns`, default 16384;
	// 0 means no limit.
	MaxConns int `json:"max_conns"`
	// H2C enables cleartext HTTP/2 on a listener without TLS: with prior
	// knowledge, and by Upgrade: h2c on the "sluice" HTTP2Engine. HCL
	// `h2c`, default false.
	H2C bool `json:"h2c"`
	// TCPNoPush sends a large HTTP/1.1 response (a body over 4 KiB) in
	// full TCP segments, under TCP_CORK from its head to its last byte, as
	// nginx's tcp_nopush does: fewer packets on a network, but more
	// server CPU on loopback. Linux, plain HTTP/1.1. HCL `tcp_nopush`,
	// default false.
	TCPNoPush bool `json:"tcp_nopush"`
	// HTTP3 also serves HTTP/3 (QUIC) on the same port over UDP, and
	// advertises it to HTTP/1.1 and HTTP/2 clients with Alt-Svc. Only on a
	// TLS address. HCL `http3`, default false.
	HTTP3 bool `json:"http3"`
	// HTTP2Engine picks the engine of the listener's HTTP/2 (ALPN h2 and
	// h2c): "sluice" (host/h2, sluice's own) or "std" (net/http, kept as
	// the fallback). HCL `http2_engine`, default "sluice".
	HTTP2Engine string `json:"http2_engine"`
	// TrustedProxies are the peers (addresses or CIDR prefixes) whose
	// X-Forwarded-For or Forwarded header names the client: allow/deny,
	// rate limits, access logs and the proxy's X-Forwarded-For then all
	// use that client address. From any other peer, X-Real-IP is removed
	// and the peer is the client. HCL `trusted_proxies`, default none.
	TrustedProxies []string `json:"trusted_proxies"`

	// Implicit is true when the config has no block for this address and
	// these are the defaults. Computed.
	Implicit bool `json:"implicit"`
	// TLS is true when the sites on this address use TLS (all of them or
	// none: mixing is an error). Computed.
	TLS bool `json:"tls"`
	// Sites names the sites that listen here, in file order. Computed.
	Sites []string `json:"sites"`
	// DefaultSite names the site that answers requests whose Host matches
	// no site here: the site with `default = true`, else the first site.
	// "" when only redirects live here. Computed.
	DefaultSite string `json:"default_site"`
	// Redirects names the sites whose https_redirect includes this address
	// (plain HTTP requests for their names get a redirect to https).
	// Computed.
	Redirects []string `json:"redirects"`
	// Range is the block's label, or for an implicit listener the first
	// element of a listen list that names the address.
	Range hcl.Range `json:"-"`
}

// Admin is the admin listener: the `admin {}` block. It serves /metrics,
// /healthz, /readyz, POST /reload, /config and /filters.
type Admin struct {
	// Listen is the admin address. HCL `listen`, default "127.0.0.1:2019";
	// "unix/PATH" ("unix//run/sluice/admin.sock") is a unix socket.
	Listen string `json:"listen"`
	// SocketMode is a unix socket's file mode, in octal as written.
	// HCL `socket_mode`, default "" ("0600"); checked to parse.
	SocketMode string `json:"socket_mode,omitempty"`
	// Token, when set, is a bearer token every admin request must carry
	// (except /healthz and /readyz). HCL `token`, default "" (no token).
	// Redacted replaces it.
	Token string `json:"token"`
	// Range is the `admin` block's header.
	Range hcl.Range `json:"-"`
}

// Telemetry is the `telemetry {}` block.
type Telemetry struct {
	// ServiceName is the OpenTelemetry service.name. HCL `service_name`,
	// default "sluice".
	ServiceName string `json:"service_name"`
	// Traces is the `traces {}` block; nil means no tracing.
	Traces *Traces `json:"traces"`
	// Metrics is the `metrics {}` block.
	Metrics Metrics `json:"metrics"`
	// AccessLog is the `access_log {}` block; nil means no access log.
	AccessLog *AccessLog `json:"access_log"`
	// Logs is the `logs {}` block: sluice's own log records exported over
	// OTLP as well; nil means none.
	Logs *Logs `json:"logs"`
}

// Traces configures the OTLP trace exporter: the `traces {}` block.
type Traces struct {
	// Endpoint is the collector URL, http:// or https://. HCL `endpoint`,
	// required.
	Endpoint string `json:"endpoint"`
	// Protocol is the OTLP transport: "http/protobuf" or "grpc". HCL
	// `protocol`, default "http/protobuf".
	Protocol string `json:"protocol"`
	// Headers are sent with every export (for example an API key). HCL
	// `headers`, a map of strings, default none. Redacted replaces values.
	Headers map[string]string `json:"headers"`
	// SampleRatio is the fraction of root traces sampled, 0 to 1 (parent
	// decisions are honoured). HCL `sample_ratio`, default 1.0.
	SampleRatio float64 `json:"sample_ratio"`
	// Range is the `traces` block's header.
	Range hcl.Range `json:"-"`
}

// Metrics is the `metrics {}` block.
type Metrics struct {
	// Prometheus serves metrics on the admin listener's /metrics. HCL
	// `prometheus`, default true.
	Prometheus bool `json:"prometheus"`
	// Endpoint, when set, also pushes every metric /metrics has to an
	// OTLP collector: http:// or https://, as traces'. HCL `endpoint`,
	// default "" (no OTLP export).
	Endpoint string `json:"endpoint,omitempty"`
	// Protocol is the OTLP transport, as traces'. HCL `protocol`, default
	// "http/protobuf".
	Protocol string `json:"protocol,omitempty"`
	// Headers are sent with every export, as traces'. HCL `headers`.
	// Redacted replaces values.
	Headers map[string]string `json:"headers,omitempty"`
	// Interval is how often metrics are pushed. HCL `interval`, default
	// "60s".
	Interval time.Duration `json:"interval,omitempty"`
}

// Logs configures the OTLP log exporter: the `logs {}` block. Every
// record of sluice's own log (not the access log) at Level or above is
// exported, with its attributes, besides going where it goes now.
type Logs struct {
	// Endpoint is the collector URL, http:// or https://. HCL `endpoint`,
	// required.
	Endpoint string `json:"endpoint"`
	// Protocol is the OTLP transport: "http/protobuf" or "grpc". HCL
	// `protocol`, default "http/protobuf".
	Protocol string `json:"protocol"`
	// Headers are sent with every export. HCL `headers`, default none.
	// Redacted replaces values.
	Headers map[string]string `json:"headers"`
	// Level is the least severity exported: "debug", "info", "warn" or
	// "error". HCL `level`, default "info".
	Level string `json:"level"`
	// Range is the `logs` block's header.
	Range hcl.Range `json:"-"`
}

// AccessLog is the `access_log {}` block.
type AccessLog struct {
	// Format is "json" (one object per line) or "clf" (combined log
	// format plus trace id). HCL `format`, default "json".
	Format string `json:"format"`
	// Output is "stderr", "stdout" or a file path (resolved against the
	// config file's directory; its directory must exist). HCL `output`,
	// default "stderr".
	Output string `json:"output"`
	// Fields name what a line holds, in order, from AccessLogFields: a
	// JSON line's keys, or the key=value pairs after the combined log
	// format's own fields in CLF. HCL `fields`, default nil: the
	// format's fields of old (for JSON time, remote_addr, method, uri,
	// proto, status, bytes, duration, host, user_agent, referer, site,
	// route, trace_id, span_id; for CLF host, site, route, duration,
	// trace_id, span_id).
	Fields []string `json:"fields"`
	// Range is the `access_log` block's header.
	Range hcl.Range `json:"-"`
}

// AccessLogFields are the names an access log's `fields` may list
// (host/observe's FieldNames; a test in host keeps the two the same).
var AccessLogFields = []string{
	"time", "remote_addr", "method", "uri", "proto", "status", "bytes", "duration",
	"host", "user_agent", "referer", "site", "route", "trace_id", "span_id",
	"request_id", "consumer", "upstream_addr", "upstream_status", "upstream_duration",
	"tls_version", "tls_cipher", "tls_server_name",
}

// Filter is a WebAssembly filter: the `filter "NAME" {}` block.
type Filter struct {
	// Name is the block label, referenced by routes' `filters`.
	Name string `json:"name"`
	// Module is the absolute path of the .wasm file (HCL `module`,
	// required, resolved against the config file's directory; it must be
	// a readable file). The server recompiles it when it changes.
	Module string `json:"module"`
	// Config is the HCL `config` attribute, any value, encoded as JSON and
	// handed to the guest. Default "{}". Redacted replaces it.
	Config json.RawMessage `json:"config"`
	// Timeout is the deadline of one invocation. HCL `timeout`, default
	// "100ms"; must be above zero.
	Timeout time.Duration `json:"timeout"`
	// InitTimeout bounds the start-up of one instance (_initialize or
	// _start, where a guest parses its config). HCL `init_timeout`,
	// default "10s"; must be above zero.
	InitTimeout time.Duration `json:"init_timeout"`
	// BodyTimeout bounds the read of the request body of a filter that
	// reads it (buffer_request), which is read whole, up to max_buffer,
	// before the request takes an instance: a slow client holds a
	// buffer, not an instance, and gets 408 past it. HCL `body_timeout`,
	// default the filter's `timeout`; above zero when set.
	BodyTimeout time.Duration `json:"body_timeout"`
	// Memory is the largest linear memory of one instance, in bytes. HCL
	// `memory`, a size, default "16MiB", rounded up to whole 64KiB Wasm
	// pages, at most "4GiB".
	Memory int64 `json:"memory"`
	// MaxBuffer is the most body bytes the host holds in memory for the
	// filter: a request body it reads with buffer_request, or a response
	// body it reads. A larger request body gets 413, a larger response
	// body 502. HCL `max_buffer`, a size, default "1MiB", at most "1GiB";
	// "0B" means no body may be buffered for it (an empty one still
	// reads). A response body the filter never reads is not buffered.
	MaxBuffer int64 `json:"max_buffer"`
	// Reset is when an instance is made a copy of the snapshot of the
	// guest's start-up again: "never" (state persists across requests)
	// or "request" (after every request; the instance is held for the
	// whole request). HCL `reset`, default "never".
	Reset string `json:"reset"`
	// Pool is the `pool {}` block.
	Pool Pool `json:"pool"`
	// Range is the block's label.
	Range hcl.Range `json:"-"`
	// ModuleRange is the `module` attribute's value: compile failures are
	// reported there.
	ModuleRange hcl.Range `json:"-"`
	// ConfigRange is the `config` attribute's value, or the block's label
	// when there is none: a config the filter rejects when it starts is
	// reported there.
	ConfigRange hcl.Range `json:"-"`
}

// Pool sizes a filter's instance pool: the `pool {}` block.
type Pool struct {
	// Size is the most live instances of the filter. HCL `size`, default 0
	// meaning the number of CPUs.
	Size int `json:"size"`
}

// Site is a virtual host: the `site "NAME" {}` block.
type Site struct {
	// Name is the block label: a host name, a wildcard "*.example.com",
	// or "*" or "_" for a catch-all site.
	Name string `json:"name"`
	// Aliases are further host names of the site. HCL `aliases`, default
	// none. Names and aliases are compared case-insensitively and must be
	// unique among the sites sharing a listener.
	Aliases []string `json:"aliases"`
	// Listen lists the addresses the site is served on ("host:port"). HCL
	// `listen`, default [":8443"] when the site has tls, else [":8080"].
	Listen []string `json:"listen"`
	// Default makes this the site for requests whose Host matches no site
	// on its listeners. HCL `default`, default false; when no site on a
	// listener says so, the first one listed there is the default.
	Default bool `json:"default"`
	// HTTPSRedirect lists plain addresses on which requests for this site
	// are redirected (308) to https. HCL `https_redirect`, default none;
	// needs tls.
	HTTPSRedirect []string `json:"https_redirect"`
	// HSTS is the Strict-Transport-Security value sent on TLS responses.
	// HCL `hsts`, default "" (not sent).
	HSTS string `json:"hsts"`
	// TLS is the `tls {}` block; nil means plain HTTP.
	TLS *TLS `json:"tls"`
	// Routes are the `route "PATH" {}` blocks in file order (at least one).
	Routes []*Route `json:"routes"`
	// ErrorPages maps a status code (400-599) to an HTML file (resolved
	// against the config file's directory; it must exist) served as the
	// body of error responses the server itself generates. HCL
	// `error_pages = { 404 = "404.html" }`, default none.
	ErrorPages map[int]string `json:"error_pages"`
	// Range is the block's label.
	Range hcl.Range `json:"-"`
}

// TLS configures a site's certificate: the `tls {}` block. Exactly one of
// Cert/Key and ACME is set.
type TLS struct {
	// Cert and Key are PEM files (resolved against the config file's
	// directory). HCL `cert`, `key`; both or neither.
	Cert string `json:"cert"`
	Key  string `json:"key"`
	// ACME is the `acme {}` block: obtain and renew certificates
	// automatically for the site's name and aliases.
	ACME *ACME `json:"acme"`
	// ClientAuth is "" (no client certificates), "require" or
	// "verify_if_given". HCL `client_auth`, default "".
	ClientAuth string `json:"client_auth"`
	// ClientCA is the PEM bundle client certificates are verified
	// against. HCL `client_ca`; required when client_auth is set.
	ClientCA string `json:"client_ca"`
	// ClientCertHeader names a request header that carries the verified
	// client certificate's subject (RFC 4514) to filters and upstreams;
	// any copy a client sends is removed. HCL `client_cert_header`,
	// default "" (not sent); needs client_auth.
	ClientCertHeader string `json:"client_cert_header"`
	// MinVersion is "1.2" or "1.3". HCL `min_version`, default "1.2".
	MinVersion string `json:"min_version"`
	// Range is the `tls` block's header.
	Range hcl.Range `json:"-"`
	// CertRange, KeyRange and ClientCARange are the values of `cert`,
	// `key` and `client_ca` (the block's header when absent): a file
	// that cannot be used when the site is built is reported there.
	CertRange, KeyRange, ClientCARange hcl.Range `json:"-"`
}

// ACME is the `acme {}` block.
type ACME struct {
	// Email is the account contact. HCL `email`, default "" (optional).
	Email string `json:"email"`
	// Directory is the ACME directory URL. HCL `directory`, default
	// Let's Encrypt production.
	Directory string `json:"directory"`
	// Challenges lists the challenge types tried, in order: "tls-alpn-01",
	// "http-01". HCL `challenges`, default ["tls-alpn-01", "http-01"].
	Challenges []string `json:"challenges"`
	// Storage is the directory for accounts and certificates (resolved
	// against the config file's directory). HCL `storage`, default ""
	// meaning "<user config dir>/sluice/acme".
	Storage string `json:"storage"`
}

// DefaultACMEDirectory is the Let's Encrypt production directory.
const DefaultACMEDirectory = "https://acme-v02.api.letsencrypt.org/directory"

// Route maps a path prefix to a handler: the `route "PATH" {}` block.
//
// A route matches a request path equal to Path or below it: "/api"
// matches "/api" and "/api/x" but not "/apix"; "/api/" matches "/api/x".
// The longest matching route of a site wins, whatever the file order.
type Route struct {
	// Path is the block label; it starts with "/" and has no "..", "//",
	// "?" or "#".
	Path string `json:"path"`
	// Filters names the filters run for this route, in order (responses
	// pass through them in reverse). HCL `filters`, default none.
	Filters []string `json:"filters"`
	// Kind is the type of the route's one handler block: a kind
	// registered with RegisterHandler ("static", "proxy", "respond").
	Kind string `json:"-"`
	// Blocks holds the route's blocks of registered kinds by type: its
	// handler (under Kind) and the blocks beside it (RegisterRouteBlock:
	// "rate_limit"). In the JSON form every registered kind is a key of
	// the route, null where the route has no such block.
	Blocks map[string]Block `json:",inline"`
	// Allow and Deny are IP addresses or CIDR prefixes. When Allow is
	// set only matching clients are served; Deny is checked first.
	// Refused clients get 403. HCL `allow`, `deny`, default none.
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
	// Range is the block's label.
	Range hcl.Range `json:"-"`
}

// Handler is the route's handler block: Blocks[Kind].
func (r *Route) Handler() Block { return r.Blocks[r.Kind] }

// UpstreamTLS is the `tls {}` block of a connection sluice makes: the
// store's and a proxy's (host/proxy names it TLSOptions). One schema,
// decoded from its tags (see Block), so the two cannot drift. TLS 1.2 is
// the minimum.
type UpstreamTLS struct {
	// CA is a PEM bundle that replaces the system roots.
	CA string `json:"ca" hcl:"ca,file" type:"path" doc:"PEM bundle that replaces the system roots" default:"system roots"`
	// ServerName overrides the name verified and sent in SNI; default
	// the upstream's (or the store address's) host.
	ServerName string `json:"server_name" hcl:"server_name" doc:"name verified and sent in SNI" default:"the upstream's host"`
	// Cert and Key are a client certificate, for servers that require
	// mutual TLS (both or neither).
	Cert string `json:"cert" hcl:"cert,file" type:"path" doc:"client certificate; both or neither" default:"" row:"|cert|, |key|"`
	Key  string `json:"key" hcl:"key,file" row:"-"`
	// InsecureSkipVerify disables certificate verification. Only for
	// tests.
	InsecureSkipVerify bool `json:"insecure_skip_verify" hcl:"insecure_skip_verify" doc:"do not verify the upstream's certificate"`
	// Range is the `tls` block's header; CARange, CertRange and KeyRange
	// are the values of `ca`, `cert` and `key` (the header when absent):
	// a file that cannot be used when the handler is built is reported
	// there.
	Range     hcl.Range `json:"-" hcl:",range"`
	CARange   hcl.Range `json:"-" hcl:"ca,range"`
	CertRange hcl.Range `json:"-" hcl:"cert,range"`
	KeyRange  hcl.Range `json:"-" hcl:"key,range"`
}

// DecodeHCL checks that cert and key come together.
func (t *UpstreamTLS) DecodeHCL(b *Body) {
	switch {
	case b.Has("cert") && !b.Has("key"):
		b.Errorf(b.AttrRange("cert"), "Certificate without key", "A client cert needs its key; add key = \"key.pem\".")
	case b.Has("key") && !b.Has("cert"):
		b.Errorf(b.AttrRange("key"), "Key without certificate", "A client key needs its cert; add cert = \"cert.pem\".")
	}
}

// Store is the `store "redis" {}` block: a Redis server that several
// sluice instances share, so that rate limits count across all of them
// and one of them orders each ACME certificate for all.
type Store struct {
	// Kind is the block's label; "redis" is the only kind.
	Kind string `json:"kind"`
	// Address is the server's host:port. HCL `address` (required).
	Address string `json:"address"`
	// Username and Password authenticate (Redis ACL, or AUTH with only a
	// password). HCL `username`, `password`, default "". Redacted
	// replaces the password.
	Username string `json:"username"`
	Password string `json:"password"`
	// TLS is the `tls {}` block; nil means plain TCP.
	TLS *UpstreamTLS `json:"tls"`
	// Prefix starts every key sluice writes, so that several deployments
	// can share one server. HCL `prefix`, default "sluice:".
	Prefix string `json:"prefix"`
	// Timeout bounds every call to the server, connecting included. HCL
	// `timeout`, default "250ms".
	Timeout time.Duration `json:"timeout"`
	// Required makes /readyz answer 503 while the server does not
	// answer. HCL `required`, default false (an instance serves without
	// it: rate limits follow on_store_error).
	Required bool `json:"required,omitempty"`
	// Range is the `store` block's header.
	Range hcl.Range `json:"-"`
}
