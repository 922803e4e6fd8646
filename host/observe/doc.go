// Package observe is sluice's telemetry: Prometheus metrics, OpenTelemetry
// traces and the access log.
//
// Where it sits on the request path: Observer.Wrap is the outermost
// layer of every route handler (host/generation's Deps.Wrap), so a
// request meets it after the site and route were chosen and leaves it
// after the filters and the native handler returned; the engine writes
// the response after that. The filter
// host reports each Wasm invocation to Metrics.Invocation, the proxy each
// upstream attempt to an Upstream handle and injects the trace context
// with Inject.
//
// Labels come only from configuration values (site names, route paths,
// filter names, upstream URLs) and from small fixed sets (methods folded
// to the known ones plus "_OTHER", status codes): never from raw request
// paths or Host headers. Label children are resolved once per site, route,
// method and status, so a request costs atomic loads and histogram
// observations, not map lookups with string building.
//
// What observe imports of host is drawn in host/README.md; outside host,
// Prometheus and OpenTelemetry. It must not import runtime (the filter
// host calls it through a method set that matches runtime.Observer) nor
// config (host translates config into Options).
package observe
