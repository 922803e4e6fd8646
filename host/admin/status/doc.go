// Package status is the admin API's live view: the JSON shapes of
// /status, /upstreams and /filters (snake_case, zero times omitted), the
// bounded history behind them (reloads, recent samples per upstream and
// filter, filter latency by phase), and the status page itself, a small
// HTML, CSS and JavaScript file set embedded in the binary (Assets), so
// the page works offline and loads nothing from elsewhere.
//
// Where it sits: beside the request path. The only thing on it is
// Phases.Invocation, one lock-free map read and three atomic adds per
// filter call. The host fills a Status from its serving generation;
// Sampler adds the recent rates when the API is asked, so nothing runs
// while nobody looks.
//
// status imports only the standard library; it must not import
// runtime, config or host.
package status
