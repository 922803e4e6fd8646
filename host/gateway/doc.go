// Package gateway holds the native request gates that sit in front of a
// route's handler: token-bucket rate limiting (Limiter) and allow/deny
// lists of client addresses (ACL), and Wrap, which puts both in front of
// an exchange.Handler.
//
// Where it sits on the request path: after site and route matching and the
// request filters (so that an auth filter can name the consumer a limit is
// keyed by), before the native handler (static or proxy). A denied request
// is answered 403; one over its rate 429 with Retry-After. Both are
// returned as *exchange.Error and rendered by the host.
//
// Both gates are built once per configuration generation and read without
// allocating on the request path; the limiter's memory is fixed by
// RateLimit.MaxKeys however many distinct keys arrive.
//
// With RateLimit.Shared set (a `store` in the config), the buckets live
// in that store, shared by every instance, and the limiter keeps only a
// local allowance per key (see host/RATIONALE.md); a request whose limit
// cannot be checked is decided by RateLimit.OnStoreError: this
// instance's own buckets ("local", a config's default), 503 or admit.
//
// Every answer of a limited route carries RateLimit-Policy and, where
// the instance knows the count, RateLimit (the IETF httpapi draft); a
// refusal carries Retry-After. Each decision is counted by the limit's
// name (EachDecisionCount: sluice_rate_limit_decisions_total).
//
// The `rate_limit {}` block of a route decodes into RateLimit (its hcl
// tags are the schema, RateLimitDefaults the defaults, its doc tags the
// reference in config/CONFIG.md); see block.go.
//
// What it imports of host is drawn in host/README.md; outside host,
// config (to register the rate_limit block; config imports nothing of
// the host). It must not import runtime, nor the store (Shared is an
// interface of its own). The host
// adds the store and the limit's name to a decoded RateLimit, and maps a
// route's allow and deny onto the ACL.
package gateway
