package proxy

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host/exchange"
	"github.com/sluicehq/sluice/host/internal/pemfile"
	"github.com/sluicehq/sluice/host/proxy/internal/balance"
)

// Options configure one proxy route, and are the schema of the `proxy {}`
// block: a field tagged hcl is an attribute or child block of it (see
// config.Block for the tags); the doc tags are its reference, the rows of
// the proxy table in config/CONFIG.md (TestReference checks them). A
// config's proxy block decodes into Defaults() and reaches New as it is.
// For Go users, the zero value of a field means its default, stated in
// Defaults.
type Options struct {
	// Upstreams are the servers to proxy to; at least one. In a config
	// they come from `upstreams` (weight 1 each), then from the
	// `upstream "URL" {}` blocks.
	Upstreams []Upstream `hcl:"upstreams,custom" doc:"URLs, weight 1 each: |\"http://host:port\"|, |\"https://host:port\"| or |\"h2c://host:port\"| (cleartext HTTP/2); no path, query or user info" type:"list" default:""`
	_         struct{}   `hcl:"upstream,block,label=url,custom" doc:"an upstream with a weight (default 1, at least 1); combines with |upstreams|" row:"|upstream \"URL\" { weight }|"`

	// Balance is the policy that picks an upstream: "round_robin"
	// (default; smooth weighted), "least_conn", "random_two" (power of
	// two choices on requests in flight), "ip_hash" (client address),
	// "header_hash" (the HashHeader request header) or "cookie" (sticky).
	Balance string `hcl:"balance,oneof=round_robin|least_conn|random_two|ip_hash|header_hash|cookie" doc:"|\"round_robin\"| (weighted), |\"least_conn\"|, |\"random_two\"| (power of two choices), |\"ip_hash\"|, |\"header_hash\"|, |\"cookie\"|"`
	// HashHeader is the request header header_hash hashes; required for
	// it. Requests without the header go round robin.
	HashHeader string `hcl:"hash_header,header" doc:"the header hashed by |\"header_hash\"| (required there)"`
	// Cookie is the sticky cookie's name for Balance "cookie"; default
	// "sluice_upstream".
	Cookie string `hcl:"cookie" doc:"the cookie that pins a client under |\"cookie\"|"`

	// Timeout bounds the wait for an upstream's response headers, all
	// tries included, and then each wait for more of its body: a body that
	// keeps flowing is never cut, one that stalls for Timeout is. Default
	// 60s.
	Timeout time.Duration `hcl:"timeout" doc:"the whole upstream exchange; |\"0s\"|: no limit"`
	// DialTimeout bounds connecting to an upstream.
	DialTimeout time.Duration `hcl:"dial_timeout" doc:"connecting"`
	// TLSHandshakeTimeout bounds the TLS handshake with an https
	// upstream.
	TLSHandshakeTimeout time.Duration `hcl:"tls_handshake_timeout" doc:"TLS handshake with an |https://| upstream"`
	// ResponseHeaderTimeout bounds one try's wait for the response
	// headers once the request is sent.
	ResponseHeaderTimeout time.Duration `hcl:"response_header_timeout" doc:"waiting for response headers after the request is sent"`
	// IdleTimeout closes upstream connections idle this long.
	// Keep it below the upstreams' own keep-alive timeout.
	IdleTimeout time.Duration `hcl:"idle_timeout" doc:"idle pooled connections are closed after this"`

	// MaxIdleConns caps the idle keep-alive connections kept per
	// upstream.
	MaxIdleConns int `hcl:"max_idle_conns" doc:"idle pooled connections per upstream"`
	// MaxConns caps the connections per upstream (requests beyond it
	// wait, up to Timeout); 0 means unlimited.
	MaxConns int `hcl:"max_conns" doc:"connections per upstream; |0|: no limit"`

	// Tries is how many upstreams one request may be tried on.
	// A request is tried again only when it failed before any byte of it
	// was sent (a failed connect), or when its method is idempotent
	// (RFC 9110, section 9.2.2) and its body can be sent again. A POST is
	// never sent twice. A retry goes to an upstream not tried yet while
	// one is available.
	Tries int `hcl:"tries,min=1,max=100" doc:"most attempts, the first included; another upstream is tried when no connection could be made, or for an idempotent request when no response byte arrived"`
	// TryDuration is the time after the first try within which another
	// may start.
	TryDuration time.Duration `hcl:"try_duration" doc:"no new attempt starts this long after the first"`
	// TunnelIdleTimeout closes an upgraded connection (a WebSocket, over
	// HTTP/1.1 or HTTP/2's extended CONNECT) when no byte has passed
	// either way for this long, so that a tunnel whose ends went quiet
	// (a peer gone without a FIN) does not hold two connections for
	// ever. Default 60s, nginx's proxy_read_timeout; keep it above the
	// application's ping interval.
	TunnelIdleTimeout time.Duration `hcl:"tunnel_idle_timeout,positive" doc:"an upgraded connection (WebSocket) with no byte either way this long is closed"`

	// Health turns on active health checks when set.
	Health *HealthCheck `hcl:"health,block" doc:"active health checks" default:"none"`
	// Passive configures ejection on consecutive failures; nil means the
	// defaults. An upstream that is the only one of its route is never
	// ejected (there would be nothing left to send to).
	Passive *Passive `hcl:"passive_health,block" doc:"take upstreams out after failures" default:"on, defaults below"`

	// TLS configures connections to https:// upstreams; nil means system
	// roots and the upstream's host name.
	TLS *TLSOptions `hcl:"tls,block" doc:"TLS to |https://| upstreams" default:"system roots"`

	// Buffering reads an HTTP/1.1 upstream's whole response before
	// answering, freeing the upstream sooner. Default false: bodies
	// stream, and event streams and chunked bodies reach the client as
	// they come. Responses up to 64 KiB with a known length are read whole
	// either way.
	Buffering bool `hcl:"buffering" doc:"read the whole request body before sending it (allows retrying requests with bodies)"`
	// HTTP2 makes https:// upstreams speak HTTP/2 (ALPN h2), as gRPC over
	// TLS needs. h2c:// upstreams always speak HTTP/2; http:// ones never.
	HTTP2 bool `hcl:"http2" doc:"speak HTTP/2 to |https://| upstreams (gRPC over TLS); |h2c://| upstreams always do"`
	// MaxBody limits the request body, in bytes; larger requests are
	// answered 413. Default 0, no limit (a config's listener limit).
	MaxBody int64 `hcl:"max_body" doc:"request body limit for this route; |\"0B\"| means the listener's |max_request_body|"`
	// StripPrefix is removed from the request path, at a segment
	// boundary, before it is sent upstream ("/api" makes "/api/users"
	// "/users").
	StripPrefix string `hcl:"strip_prefix" doc:"removed from the path before forwarding, like |\"/api\"|"`
	// HostHeader is the Host sent upstream: "upstream" (default; the
	// upstream's host:port), "keep" (the client's) or a literal host
	// name (unless HeaderUp sets Host).
	HostHeader string `hcl:"host_header" doc:"|Host| sent upstream: |\"upstream\"| (the upstream's host:port), |\"keep\"| (the client's) or a literal name"`
	// HeaderUp edits the request headers sent upstream; HeaderDown the
	// response headers sent to the client. Removals apply first, then
	// Set, then Add. nil edits nothing.
	HeaderUp   *HeaderOps `hcl:"header_up,block" doc:"edit request headers sent upstream" default:""`
	HeaderDown *HeaderOps `hcl:"header_down,block" doc:"edit response headers sent to the client" default:""`
	// TrustedProxies are the peers whose X-Forwarded-For, -Proto, -Host
	// and Forwarded headers are believed and extended. From any other
	// peer, those headers are replaced.
	TrustedProxies []netip.Prefix `hcl:"trusted_proxies" doc:"CIDRs whose |X-Forwarded-For| is kept and extended (and the client IP read from it); from anyone else it is replaced"`

	// Logger receives upstream failures and health changes; nil means
	// slog.Default().
	Logger *slog.Logger

	// Observe, when set, is called by New once per upstream, with its URL
	// as written in Upstreams; the observer it returns (nil: none) is told
	// of every try on that upstream, of its health changes, and, by
	// Handler.Close, that the upstream is gone. The host feeds its
	// upstream metrics this way.
	Observe func(upstreamURL string) UpstreamObserver
	// TracerProvider makes the client span of each try of a sampled
	// request; nil means otel.GetTracerProvider() (the global one, which
	// follows later otel.SetTracerProvider calls).
	TracerProvider trace.TracerProvider
}

// UpstreamObserver is told what happens on one upstream (see
// Options.Observe). *observe.Upstream is one. Its methods are called
// concurrently, Request on the request path: it must not block.
type UpstreamObserver interface {
	// Request reports one try: the response status, or 0 when no
	// complete response arrived (connection refused, timeout, broken
	// response), and how long the try took: until the response headers
	// arrived, or until it failed.
	Request(status int, d time.Duration)
	// SetHealthy reports a change of the upstream's availability: taken
	// down or brought back by the active checks, ejected or readmitted
	// by the passive ones. Upstreams start out healthy.
	SetHealthy(healthy bool)
	// Close reports that the handler is closed. Requests still in flight
	// may report their tries after it.
	Close() error
}

// TryObserver is an UpstreamObserver that also wants each try with its
// exchange, for what it logs of the request (the access log's
// upstream_addr, upstream_status and upstream_duration): status and d as
// for Request, reported right after it.
type TryObserver interface {
	Tried(x exchange.Exchange, status int, d time.Duration)
}

// TransitionObserver is an UpstreamObserver that is also told why an
// upstream's availability changed (*observe.Upstream is one: it counts
// sluice_upstream_health_transitions_total).
type TransitionObserver interface {
	UpstreamObserver
	// Transition follows SetHealthy: to is "healthy" or "ejected", reason
	// one of ReasonActiveFall, ReasonMaxFails, ReasonActiveRise and
	// ReasonCoolDown.
	Transition(to, reason string)
}

// Why an upstream left or rejoined the rotation: the reason label of the
// transitions metric and the reason field of the log line.
const (
	ReasonActiveFall = "active_fall"       // fall failing active checks in a row
	ReasonMaxFails   = "passive_max_fails" // max_fails failed requests in a row
	ReasonActiveRise = "active_rise"       // rise passing active checks in a row
	ReasonCoolDown   = "cool_down_over"    // fail_timeout ran out
)

// Upstream is one server.
type Upstream struct {
	// URL is "http://host:port", "https://host:port" or "h2c://host:port"
	// (HTTP/2 without TLS, for gRPC). It has no path.
	URL string `hcl:"url,label,url"`
	// Weight is the upstream's share of requests; default 1.
	Weight int `hcl:"weight,min=1,max=1000000"`
}

// HealthCheck configures active checks: a GET of Path on each upstream
// every Interval.
type HealthCheck struct {
	// Path is requested on each upstream ("/health"); required.
	Path string `hcl:"path,required" doc:"requested with |GET|; starts with |/|" default:"required"`
	// Interval between checks.
	Interval time.Duration `hcl:"interval,positive" doc:"between checks; above zero"`
	// Timeout per check.
	Timeout time.Duration `hcl:"timeout,positive" doc:"one check; above zero"`
	// ExpectStatus is the healthy status.
	ExpectStatus int `hcl:"expect_status,min=100,max=599" doc:"the healthy status"`
	// Rise successes in a row bring a down upstream back.
	Rise int `hcl:"rise,min=1,max=1000" doc:"passing checks in a row to come back"`
	// Fall failures in a row take an upstream down.
	Fall int `hcl:"fall,min=1,max=1000" doc:"failing checks in a row to go out"`
}

// SetDefaults fills the zero fields of h with their defaults, stated
// here once.
func (h *HealthCheck) SetDefaults() {
	h.Interval = orDur(h.Interval, 5*time.Second)
	h.Timeout = orDur(h.Timeout, 2*time.Second)
	h.ExpectStatus = orInt(h.ExpectStatus, 200)
	h.Rise = orInt(h.Rise, 2)
	h.Fall = orInt(h.Fall, 3)
}

// Passive configures passive health: an upstream that fails MaxFails
// requests in a row (connect errors, timeouts, broken responses) is
// ejected for CoolDown, then readmitted.
type Passive struct {
	// MaxFails in a row eject; 0 or negative turns passive checks off
	// (a nil Passive means Defaults().Passive).
	MaxFails int `hcl:"max_fails,max=1000000" doc:"failures in a row (connection errors, timeouts, broken responses; an upstream's own 5xx answers are not failures) that take an upstream out for |fail_timeout|; |0| disables"`
	// CoolDown is how long an ejected upstream sits out.
	CoolDown time.Duration `hcl:"fail_timeout,positive" doc:"how long an upstream taken out sits out"`
}

// TLSOptions configure connections to https:// upstreams: the client
// TLS block the store shares (config.UpstreamTLS, one schema for both).
type TLSOptions = config.UpstreamTLS

// HeaderOps edit a set of headers: the header_up and header_down blocks.
type HeaderOps struct {
	Set    map[string]string `hcl:"set,headers" doc:"replace a header"`
	Add    map[string]string `hcl:"add,headers" doc:"append a value"`
	Remove []string          `hcl:"remove,header" doc:"delete headers"`
}

// SetDefaults makes the nil fields of h empty.
func (h *HeaderOps) SetDefaults() {
	if h.Set == nil {
		h.Set = map[string]string{}
	}
	if h.Add == nil {
		h.Add = map[string]string{}
	}
	if h.Remove == nil {
		h.Remove = []string{}
	}
}

// UpstreamStats is one upstream's state, for metrics and the admin
// status page.
type UpstreamStats struct {
	URL      string
	Healthy  bool  // not marked down by health checks nor ejected
	InFlight int64 // requests being served now
	Requests uint64
	Failures uint64
	// Down: the active health checks took it out. Ejected: the passive
	// checks did, for EjectedFor more.
	Down       bool
	Ejected    bool
	EjectedFor time.Duration
	// Timed counts the tries whose duration is in Latency (their sum):
	// only tries reported to an UpstreamObserver are timed.
	Timed   uint64
	Latency time.Duration
	// LastError is the last failed try's error ("" before any).
	LastError string
}

const bufferLimit = 64 << 10 // responses up to this size are read whole

type settings struct {
	timeout, dialTimeout, tlsTimeout, headerTimeout, idleTimeout time.Duration
	maxIdle, maxConns                                            int
	tries                                                        int
	tryDuration, tunnelIdle                                      time.Duration
	maxFails                                                     int
	coolDown                                                     time.Duration
}

func orDur(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func orInt(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}

// Defaults returns the options of a proxy block that sets nothing but
// its upstreams: every default of the proxy, stated here once.
func Defaults() *Options {
	return &Options{
		Balance:               "round_robin",
		Cookie:                "sluice_upstream",
		Timeout:               60 * time.Second,
		DialTimeout:           5 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		IdleTimeout:           90 * time.Second,
		MaxIdleConns:          512,
		Tries:                 3,
		TryDuration:           5 * time.Second,
		TunnelIdleTimeout:     60 * time.Second,
		Passive:               &Passive{MaxFails: 3, CoolDown: 30 * time.Second},
		HostHeader:            "upstream",
		TrustedProxies:        []netip.Prefix{},
	}
}

func (o *Options) settings() (settings, error) {
	def := Defaults()
	s := settings{
		timeout:       orDur(o.Timeout, def.Timeout),
		dialTimeout:   orDur(o.DialTimeout, def.DialTimeout),
		tlsTimeout:    orDur(o.TLSHandshakeTimeout, def.TLSHandshakeTimeout),
		headerTimeout: orDur(o.ResponseHeaderTimeout, def.ResponseHeaderTimeout),
		idleTimeout:   orDur(o.IdleTimeout, def.IdleTimeout),
		maxIdle:       orInt(o.MaxIdleConns, def.MaxIdleConns),
		maxConns:      o.MaxConns,
		tries:         orInt(o.Tries, def.Tries),
		tryDuration:   orDur(o.TryDuration, def.TryDuration),
		tunnelIdle:    orDur(o.TunnelIdleTimeout, def.TunnelIdleTimeout),
		maxFails:      def.Passive.MaxFails,
		coolDown:      def.Passive.CoolDown,
	}
	for name, d := range map[string]time.Duration{"timeout": o.Timeout, "dial_timeout": o.DialTimeout,
		"tls_handshake_timeout": o.TLSHandshakeTimeout, "response_header_timeout": o.ResponseHeaderTimeout,
		"idle_timeout": o.IdleTimeout, "try_duration": o.TryDuration, "tunnel_idle_timeout": o.TunnelIdleTimeout} {
		if d < 0 {
			return s, fmt.Errorf("%s: negative duration %s", name, d)
		}
	}
	if o.MaxIdleConns < 0 || o.MaxConns < 0 || o.Tries < 0 || o.MaxBody < 0 {
		return s, fmt.Errorf("max_idle_conns, max_conns, tries and max_body must not be negative")
	}
	if p := o.Passive; p != nil {
		s.maxFails = p.MaxFails
		if s.maxFails <= 0 {
			s.maxFails = -1 // off
		}
		s.coolDown = orDur(p.CoolDown, def.Passive.CoolDown)
	}
	if len(o.Upstreams) == 1 {
		s.maxFails = -1
	}
	switch o.Balance {
	case "header_hash":
		if o.HashHeader == "" {
			return s, fmt.Errorf("balance header_hash: hash_header is required")
		}
	}
	if err := checkHostHeader(o.HostHeader); err != nil {
		return s, err
	}
	if o.StripPrefix != "" && o.StripPrefix[0] != '/' {
		return s, fmt.Errorf("strip_prefix %q: must start with /", o.StripPrefix)
	}
	if h := o.Health; h != nil {
		if h.Path == "" || h.Path[0] != '/' {
			return s, fmt.Errorf("health: path %q must start with /", h.Path)
		}
		if h.Interval < 0 || h.Timeout < 0 || h.Rise < 0 || h.Fall < 0 {
			return s, fmt.Errorf("health: negative interval, timeout, rise or fall")
		}
	}
	for _, ops := range []*HeaderOps{o.HeaderUp, o.HeaderDown} {
		if ops == nil {
			continue
		}
		for k, v := range ops.Set {
			if err := checkHeader(k, v); err != nil {
				return s, err
			}
		}
		for k, v := range ops.Add {
			if err := checkHeader(k, v); err != nil {
				return s, err
			}
		}
		for _, k := range ops.Remove {
			if err := checkHeader(k, ""); err != nil {
				return s, err
			}
		}
	}
	return s, nil
}

func checkHeader(name, value string) error {
	if name == "" || strings.ContainsAny(name, " \t\r\n:") {
		return fmt.Errorf("header %q: invalid name", name)
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return fmt.Errorf("header %q: invalid value", name)
	}
	return nil
}

// target is a parsed upstream URL.
type target struct {
	raw    string
	scheme string // "http", "https" or "h2c"
	host   string // host:port, as sent in Host
	addr   string // host:port to dial
}

func parseTarget(raw string) (target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return target{}, fmt.Errorf("upstream %q: %w", raw, err)
	}
	t := target{raw: raw, scheme: u.Scheme, host: u.Host}
	var port string
	switch u.Scheme {
	case "http", "h2c":
		port = "80"
	case "https":
		port = "443"
	default:
		return t, fmt.Errorf("upstream %q: scheme must be http, https or h2c", raw)
	}
	if u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return t, fmt.Errorf("upstream %q: want scheme://host:port and nothing else", raw)
	}
	t.addr = u.Host
	if u.Port() == "" {
		t.addr = net.JoinHostPort(u.Hostname(), port)
	}
	return t, nil
}

// tlsConfig builds the client TLS configuration for upstreams.
func (o *Options) tlsConfig(alpn []string) (*tls.Config, error) {
	t := o.TLS
	if t == nil {
		return &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: alpn}, nil
	}
	c, err := pemfile.Client(t.CA, t.Cert, t.Key)
	if err != nil {
		return nil, err
	}
	c.NextProtos, c.ServerName, c.InsecureSkipVerify = alpn, t.ServerName, t.InsecureSkipVerify
	return c, nil
}

// FileError is a file of TLSOptions that cannot be used. Attr names the
// file as the config does ("ca", "cert" or "key"), so that the caller can
// point at the attribute.
type FileError = pemfile.Error

// idempotent reports whether a method is idempotent (RFC 9110, section
// 9.2.2).
func idempotent(m []byte) bool {
	switch string(m) {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

func validBalance(name string) bool { return name == "" || slices.Contains(balance.Names, name) }
