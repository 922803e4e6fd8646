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
	// Listen is the admin address. HCL `listen`, default "127.0.0.1:2019".
	Listen string `json:"listen"`
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
	// Range is the `access_log` block's header.
	Range hcl.Range `json:"-"`
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
// Exactly one of Static, Proxy and Respond is set.
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
	// Static is the `static {}` handler.
	Static *Static `json:"static"`
	// Proxy is the `proxy {}` handler.
	Proxy *Proxy `json:"proxy"`
	// Respond is the `respond {}` handler: a fixed response.
	Respond *Respond `json:"respond"`
	// RateLimit is the `rate_limit {}` block; nil means no limit.
	RateLimit *RateLimit `json:"rate_limit"`
	// Allow and Deny are IP addresses or CIDR prefixes. When Allow is
	// set only matching clients are served; Deny is checked first.
	// Refused clients get 403. HCL `allow`, `deny`, default none.
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
	// Range is the block's label.
	Range hcl.Range `json:"-"`
}

// Static serves files from a directory: the `static {}` block.
type Static struct {
	// Root is the absolute directory served (HCL `root`, required,
	// resolved against the config file's directory; it must be a readable
	// directory).
	Root string `json:"root"`
	// Index lists the files served for a directory request. HCL `index`,
	// default ["index.html"].
	Index []string `json:"index"`
	// Browse lists directories without an index file. HCL `browse`,
	// default false.
	Browse bool `json:"browse"`
	// Precompressed lists encodings whose precompressed siblings
	// (FILE.br, FILE.zst, FILE.gz) are served when the client accepts
	// them, in preference order: a subset of "br", "zstd", "gzip". HCL
	// `precompressed`, default none.
	Precompressed []string `json:"precompressed"`
	// Compress lists encodings used to compress responses on the fly (and
	// cache the result), in preference order: a subset of "zstd", "br",
	// "gzip". HCL `compress`, default ["zstd", "br", "gzip"]; [] disables.
	Compress []string `json:"compress"`
	// CompressMinSize is the smallest file compressed on the fly. HCL
	// `compress_min_size`, a size, default "1KiB".
	CompressMinSize int64 `json:"compress_min_size"`
	// CompressTypes lists media types compressed on the fly; "text/*"
	// matches every text type. HCL `compress_types`, default
	// DefaultCompressTypes.
	CompressTypes []string `json:"compress_types"`
	// Fallback is a file under Root (like "/index.html") served for paths
	// that match no file: single-page apps. HCL `fallback`, default "".
	Fallback string `json:"fallback"`
	// Dotfiles serves names starting with "." (otherwise 404). HCL
	// `dotfiles`, default false.
	Dotfiles bool `json:"dotfiles"`
	// MIMETypes maps a file extension (".ext") to a media type, over the
	// built-in table. HCL `mime_types`, default none.
	MIMETypes map[string]string `json:"mime_types"`
	// CacheControl is the `cache_control {}` block.
	CacheControl CacheControl `json:"cache_control"`
	// ErrorPages maps a status code (400-599) to a file under Root (like
	// "/404.html") served as the body of that error. HCL `error_pages`,
	// default none.
	ErrorPages map[int]string `json:"error_pages"`
	// Headers are added to every response. HCL `headers`, default none.
	Headers map[string]string `json:"headers"`
	// MemCacheMaxFile is the largest file kept in memory; larger files
	// are sent from disk (sendfile). HCL `mem_cache_max_file`, a size,
	// default "256KiB".
	MemCacheMaxFile int64 `json:"mem_cache_max_file"`
}

// CacheControl chooses the Cache-Control header of static responses: the
// `cache_control {}` block. An empty value sends no header.
type CacheControl struct {
	// HTML applies to text/html responses. HCL `html`, default "no-cache".
	HTML string `json:"html"`
	// Hashed applies to files whose name has a content hash: a "." or
	// "-" separated part of 8 or more hex digits or base-36 characters
	// with a digit, like "app.3f9a1c2b.js". HCL `hashed`, default
	// "public, max-age=31536000, immutable".
	Hashed string `json:"hashed"`
	// Default applies to every other file. HCL `default`, default "".
	Default string `json:"default"`
}

// DefaultCompressTypes is the default Static.CompressTypes.
var DefaultCompressTypes = []string{
	"text/*",
	"application/javascript",
	"application/json",
	"application/manifest+json",
	"application/wasm",
	"application/xml",
	"image/svg+xml",
}

// Proxy forwards requests to upstream servers: the `proxy {}` block.
type Proxy struct {
	// Upstreams come from `upstreams = ["http://a:1", ...]` (weight 1) and
	// `upstream "URL" { weight = N }` blocks, in that order; at least one.
	Upstreams []Upstream `json:"upstreams"`
	// Balance is the load-balancing policy: "round_robin" (weighted),
	// "least_conn", "random_two" (power of two choices), "ip_hash",
	// "header_hash" or "cookie". HCL `balance`, default "round_robin".
	Balance string `json:"balance"`
	// HashHeader is the request header hashed by "header_hash". HCL
	// `hash_header`; required by that policy.
	HashHeader string `json:"hash_header"`
	// Cookie is the cookie that pins a client to an upstream under
	// "cookie". HCL `cookie`, default "sluice_upstream".
	Cookie string `json:"cookie"`
	// Timeout bounds the whole upstream exchange, body included. HCL
	// `timeout`, default "60s"; "0s" means no limit.
	Timeout time.Duration `json:"timeout"`
	// DialTimeout bounds connecting. HCL `dial_timeout`, default "5s".
	DialTimeout time.Duration `json:"dial_timeout"`
	// TLSHandshakeTimeout bounds the TLS handshake. HCL
	// `tls_handshake_timeout`, default "5s".
	TLSHandshakeTimeout time.Duration `json:"tls_handshake_timeout"`
	// ResponseHeaderTimeout bounds waiting for the response headers once
	// the request is sent. HCL `response_header_timeout`, default "30s".
	ResponseHeaderTimeout time.Duration `json:"response_header_timeout"`
	// IdleTimeout closes idle pooled connections. HCL `idle_timeout`,
	// default "90s".
	IdleTimeout time.Duration `json:"idle_timeout"`
	// MaxIdleConns bounds pooled idle connections per upstream. HCL
	// `max_idle_conns`, default 512.
	MaxIdleConns int `json:"max_idle_conns"`
	// MaxConns bounds connections per upstream. HCL `max_conns`, default
	// 0 meaning no limit.
	MaxConns int `json:"max_conns"`
	// Tries is the most attempts at a request, the first included;
	// another upstream is tried only when a connection could not be made,
	// or the request is idempotent and no response byte arrived. HCL
	// `tries`, default 3.
	Tries int `json:"tries"`
	// TryDuration stops further attempts once this long has passed since
	// the first. HCL `try_duration`, default "5s".
	TryDuration time.Duration `json:"try_duration"`
	// Health is the `health {}` block: active health checks; nil means
	// none.
	Health *Health `json:"health"`
	// Passive is the `passive_health {}` block. Never nil: without the
	// block it holds the defaults (max_fails 3, fail_timeout "30s"); set
	// max_fails = 0 to disable passive checks.
	Passive *Passive `json:"passive_health"`
	// TLS is the `tls {}` block for https:// upstreams; nil means the
	// system roots and the upstream's host name.
	TLS *UpstreamTLS `json:"tls"`
	// Buffering reads the whole request body before sending it upstream
	// (and so allows retrying requests with bodies). HCL `buffering`,
	// default false: stream.
	Buffering bool `json:"buffering"`
	// HTTP2 speaks HTTP/2 to https:// upstreams (gRPC over TLS needs it);
	// h2c:// upstreams always speak HTTP/2. HCL `http2`, default false.
	HTTP2 bool `json:"http2"`
	// MaxBody bounds the request body for this route, over the listener's
	// max_request_body. HCL `max_body`, a size, default "0B" meaning the
	// listener's limit.
	MaxBody int64 `json:"max_body"`
	// StripPrefix is removed from the request path before forwarding
	// (for example the route's path "/api"). HCL `strip_prefix`, default "".
	StripPrefix string `json:"strip_prefix"`
	// HostHeader is the Host sent upstream: "upstream" (the upstream's
	// host:port), "keep" (the client's Host) or a literal host name. HCL
	// `host_header`, default "upstream".
	HostHeader string `json:"host_header"`
	// HeaderUp edits request headers sent upstream: `header_up {}`.
	HeaderUp *HeaderOps `json:"header_up"`
	// HeaderDown edits response headers sent to the client:
	// `header_down {}`.
	HeaderDown *HeaderOps `json:"header_down"`
	// TrustedProxies lists CIDRs whose X-Forwarded-For is kept and
	// extended (and whose client IP is taken from it); from others it is
	// replaced. HCL `trusted_proxies`, default none.
	TrustedProxies []string `json:"trusted_proxies"`
}

// Upstream is one upstream server.
type Upstream struct {
	// URL is "http://host:port", "https://host:port" or "h2c://host:port"
	// (cleartext HTTP/2); no path, query or user info.
	URL string `json:"url"`
	// Weight is the share of requests under round_robin. HCL `weight`,
	// default 1, at least 1.
	Weight int `json:"weight"`
	// Range is the list element or the block label.
	Range hcl.Range `json:"-"`
}

// Health is the `health {}` block: active health checks of every upstream.
type Health struct {
	// Path is requested with GET. HCL `path`, required, starts with "/".
	Path string `json:"path"`
	// Interval between checks. HCL `interval`, default "5s", above zero.
	Interval time.Duration `json:"interval"`
	// Timeout of one check. HCL `timeout`, default "2s", above zero.
	Timeout time.Duration `json:"timeout"`
	// ExpectStatus is the healthy status code. HCL `expect_status`,
	// default 200.
	ExpectStatus int `json:"expect_status"`
	// Rise is how many passing checks in a row bring an upstream back.
	// HCL `rise`, default 2.
	Rise int `json:"rise"`
	// Fall is how many failing checks in a row take it out. HCL `fall`,
	// default 3.
	Fall int `json:"fall"`
}

// Passive is the `passive_health {}` block: upstreams are taken out after
// failed requests.
type Passive struct {
	// MaxFails failures (connection errors, timeouts, 502-504) within
	// FailTimeout take an upstream out for FailTimeout. HCL `max_fails`,
	// default 3; 0 disables passive checks.
	MaxFails int `json:"max_fails"`
	// FailTimeout is the counting window and the time out. HCL
	// `fail_timeout`, default "30s".
	FailTimeout time.Duration `json:"fail_timeout"`
}

// UpstreamTLS is a proxy's `tls {}` block.
type UpstreamTLS struct {
	// CA is a PEM bundle that replaces the system roots. HCL `ca`.
	CA string `json:"ca"`
	// ServerName overrides the name verified and sent in SNI. HCL
	// `server_name`, default the upstream's host.
	ServerName string `json:"server_name"`
	// Cert and Key are a client certificate (both or neither). HCL
	// `cert`, `key`.
	Cert string `json:"cert"`
	Key  string `json:"key"`
	// InsecureSkipVerify disables certificate verification. HCL
	// `insecure_skip_verify`, default false.
	InsecureSkipVerify bool `json:"insecure_skip_verify"`
	// Range is the `tls` block's header; CARange, CertRange and KeyRange
	// are the values of `ca`, `cert` and `key` (the header when absent):
	// a file that cannot be used when the proxy is built is reported
	// there.
	Range, CARange, CertRange, KeyRange hcl.Range `json:"-"`
}

// HeaderOps edits headers: the `header_up {}` and `header_down {}` blocks.
// Remove runs first, then Set, then Add.
type HeaderOps struct {
	// Set replaces a header. HCL `set`, a map.
	Set map[string]string `json:"set"`
	// Add appends a value. HCL `add`, a map.
	Add map[string]string `json:"add"`
	// Remove deletes headers by name. HCL `remove`, a list.
	Remove []string `json:"remove"`
}

// RateLimit is a token-bucket limit per key: the `rate_limit {}` block.
// Requests over the limit get 429 with Retry-After.
type RateLimit struct {
	// Rate is the refill in tokens per second, from HCL `rate` = "N/s",
	// "N/m" or "N/h" (required; N may have a fraction).
	Rate float64 `json:"rate"`
	// Burst is the bucket size. HCL `burst`, default Rate per second
	// rounded up, at least 1.
	Burst int `json:"burst"`
	// Key chooses the bucket: "client_ip", "header:NAME" or "consumer"
	// (the identity a filter set). HCL `key`, default "client_ip".
	Key string `json:"key"`
	// MaxKeys bounds the buckets kept (least recently used go first). HCL
	// `max_keys`, default 100000.
	MaxKeys int `json:"max_keys"`
	// OnStoreError decides a request when the shared store cannot be
	// asked: "allow" or "deny" (503). HCL `on_store_error`, default
	// "allow" when the config has a store, "" (unused) without one.
	OnStoreError string `json:"on_store_error,omitempty"`
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
	// Range is the `store` block's header.
	Range hcl.Range `json:"-"`
}

// Respond answers with a fixed response: the `respond {}` block.
type Respond struct {
	// Status is the status code, 200-599. HCL `status`, default 200.
	Status int `json:"status"`
	// Body is the response body. HCL `body`, default "".
	Body string `json:"body"`
	// Headers are set on the response. HCL `headers`, default none.
	Headers map[string]string `json:"headers"`
}
