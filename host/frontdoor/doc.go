// Package frontdoor is the request policy every engine applies before
// anything else looks at a request: fasthttp (HTTP/1.1), sluice's own
// HTTP/2 engine (host/h2; net/http with http2_engine = "std") and
// quic-go (HTTP/3) all hand their exchanges to one Door.
//
// Where it sits on the request path: engine → exchange adapter → Door →
// route (host/route) → gateway → filters → native handler. A Door
// decides, once per request and in this order:
//
//   - the HTTP version (505 for anything but 1.0, 1.1, 2 and 3);
//   - CONNECT on HTTP/1.x (400: sluice is no proxy);
//   - the request's syntax, whatever the engine's parser let through
//     (syntax.go): the method a token, the target without control
//     bytes, SP or DEL, field names tokens, values without control bytes
//     but HTAB, no connection-specific field on HTTP/2 and HTTP/3 (400);
//     on HTTP/1.x, the client's Connection options, applied to what the
//     client sent before anything adds a field of its own;
//   - the authority: an absolute-form target's authority replaces Host
//     (RFC 9112, section 3.2.2) and the target becomes origin-form, so
//     that routing, the TLS policy and mutual TLS all use the same name;
//     a malformed or missing authority is a 400;
//   - the client address (trusted_proxies), and the headers no client may
//     set: the client-certificate identity headers, and X-Real-IP from an
//     untrusted peer;
//   - the request body limit (413);
//   - the site, by authority; on TLS, the site's policy: a site that
//     verifies client certificates refuses (421) a request on a
//     connection whose handshake named another site; the identity header;
//   - ACME HTTP-01 answers on plain connections;
//   - after the handler: HSTS and Alt-Svc, unless the handler set its own.
//
// What is engine-specific stays in thin shims in host/listen (the field
// and framing checks fasthttp's parser skips, lingering close, header
// timeouts).
//
// What it imports is drawn in host/README.md (TestHouseDrawing keeps the
// drawing true); it knows nothing of engines, generations or config.
package frontdoor
