package status

import (
	"embed"
	"io/fs"
	"time"
)

//go:embed assets
var assets embed.FS

// Assets are the status page's files: index.html, status.css and
// status.js.
var Assets, _ = fs.Sub(assets, "assets")

// Status is everything the status page shows: GET /status.
type Status struct {
	Build         Build         `json:"build"`
	StartedAt     time.Time     `json:"started_at"`
	UptimeSeconds float64       `json:"uptime_seconds"`
	Now           time.Time     `json:"now"`
	Draining      bool          `json:"draining"`
	Generation    Generation    `json:"generation"`
	Listeners     []Listener    `json:"listeners"`
	Sites         []Site        `json:"sites"`
	Upstreams     []Upstream    `json:"upstreams"`
	Filters       []Filter      `json:"filters"`
	Certificates  []Certificate `json:"certificates"`
	// Store is nil (null) without a store block.
	Store *Store `json:"store"`
}

// Build names the running binary.
type Build struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
}

// Generation is the config serving now and how it got there.
type Generation struct {
	// Number counts the generations swapped in: 1 is the start-up one.
	Number   uint64     `json:"number"`
	LoadedAt *time.Time `json:"loaded_at,omitempty"`
	// File is the config file ("" for an in-memory config).
	File string `json:"file,omitempty"`
	// LastError is the last refused reload's error, "" when the last
	// reload succeeded or there was none.
	LastError string `json:"last_error,omitempty"`
	// Reloads are the most recent reload attempts, newest first.
	Reloads []Reload `json:"reloads"`
}

// Reload is one load attempt.
type Reload struct {
	At    time.Time `json:"at"`
	OK    bool      `json:"ok"`
	Error string    `json:"error,omitempty"`
	// Generation is the generation it swapped in (0 when it failed).
	Generation uint64 `json:"generation,omitempty"`
}

// Listener is one listening address.
type Listener struct {
	Address string   `json:"address"`
	Bound   string   `json:"bound,omitempty"` // the address as bound (port 0 resolved)
	TLS     bool     `json:"tls"`
	HTTP3   bool     `json:"http3"`
	Sites   []string `json:"sites"`
}

// Site is one site and its routes.
type Site struct {
	Name    string   `json:"name"`
	Aliases []string `json:"aliases,omitempty"`
	Listen  []string `json:"listen"`
	TLS     string   `json:"tls"` // "none", "file" or "acme"
	Routes  []Route  `json:"routes"`
}

// Route is one route: its handler and what runs before it.
type Route struct {
	Path    string `json:"path"`
	Handler string `json:"handler"` // "proxy", "static", "respond", …
	// Target says what the handler serves: the upstreams, the root, the
	// status.
	Target  string   `json:"target,omitempty"`
	Filters []string `json:"filters"`
	// Layers are the native layers in front of the handler ("acl",
	// "rate_limit"), in order.
	Layers []string `json:"layers,omitempty"`
}

// Upstream is one upstream of one proxy route: GET /upstreams lists
// them (Caddy's /reverse_proxy/upstreams is the model).
type Upstream struct {
	Site    string `json:"site"`
	Route   string `json:"route"`
	Address string `json:"address"` // the URL as configured
	Healthy bool   `json:"healthy"`
	// Down: the active checks took it out; Ejected: the passive ones
	// did, for EjectedForSeconds more. Reason says why, "" when healthy.
	Down              bool    `json:"down"`
	Ejected           bool    `json:"ejected"`
	EjectedForSeconds float64 `json:"ejected_for_seconds,omitempty"`
	Reason            string  `json:"reason,omitempty"`
	InFlight          int64   `json:"in_flight"`
	Requests          uint64  `json:"num_requests"`
	Fails             uint64  `json:"fails"`
	LastError         string  `json:"last_error,omitempty"`
	// Recent covers the samples in Samples (up to the last minute).
	Recent  Recent  `json:"recent"`
	Samples []Point `json:"samples"`

	// Cumulative latency, for Sampler; not part of the JSON.
	Timed   uint64        `json:"-"`
	Latency time.Duration `json:"-"`
}

// Recent is a window of recent activity.
type Recent struct {
	Seconds   float64 `json:"seconds"`
	Requests  uint64  `json:"requests"`
	Failures  uint64  `json:"failures"`
	ErrorRate float64 `json:"error_rate"` // failures / requests, 0 without requests
	// LatencyMS is the mean try latency (to the response headers); 0
	// when no try was timed.
	LatencyMS float64 `json:"latency_ms"`
}

// Point is one sample: the rate since the previous one.
type Point struct {
	At        int64   `json:"t"` // unix milliseconds
	PerSecond float64 `json:"rps"`
	ErrorRate float64 `json:"error_rate"`
	LatencyMS float64 `json:"latency_ms,omitempty"`
}

// Filter is one Wasm filter: GET /filters lists them.
type Filter struct {
	Name   string `json:"name"`
	Digest string `json:"digest"`
	// PoolSize is the most instances a module's pool keeps; Live the
	// instances alive now (every pool counted, a swap's old one too);
	// InUse those serving a call now.
	PoolSize    int        `json:"pool_size"`
	Live        int        `json:"live"`
	InUse       int        `json:"in_use"` // instances serving a call now
	Invocations uint64     `json:"invocations"`
	Errors      uint64     `json:"errors"`
	Swaps       uint64     `json:"swaps"`
	SwapErrors  uint64     `json:"swap_errors"`
	LastSwap    *time.Time `json:"last_swap,omitempty"`
	StartUps    uint64     `json:"start_ups"`
	Restores    uint64     `json:"restores"`
	Resets      uint64     `json:"resets"`
	// Phases are the request and response calls with their latency;
	// empty before the first call.
	Phases  []Phase `json:"phases"`
	Recent  Recent  `json:"recent"`
	Samples []Point `json:"samples"`
}

// Phase is a filter's calls in one phase ("request" or "response").
type Phase struct {
	Phase  string `json:"phase"`
	Calls  uint64 `json:"calls"`
	Errors uint64 `json:"errors"`
	// P99MS is the 99th percentile latency over the recent window (since
	// the start when no window is kept yet), as the upper bound of its
	// histogram bucket, in milliseconds.
	P99MS float64 `json:"p99_ms"`
}

// Certificate is one certificate a TLS site serves, or waits for.
type Certificate struct {
	Site string `json:"site"`
	Name string `json:"name,omitempty"`
	// Source is "file" or "acme".
	Source string `json:"source"`
	// State is "valid", "expiring" (under 14 days left), "expired" or,
	// for ACME, "pending" (no certificate obtained yet).
	State      string     `json:"state"`
	NotAfter   *time.Time `json:"not_after,omitempty"`
	DaysLeft   *float64   `json:"days_left,omitempty"`
	ACMEIssuer string     `json:"acme_directory,omitempty"`
}

// Store is the shared store's state as its calls found it.
type Store struct {
	Address string `json:"address"`
	// State is "unknown" (no call yet), "up" or "down".
	State     string            `json:"state"`
	DownSince *time.Time        `json:"down_since,omitempty"`
	Required  bool              `json:"required"`
	Errors    map[string]uint64 `json:"errors"`
}

// Time returns &t, or nil for the zero time (so that JSON omits it).
func Time(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
