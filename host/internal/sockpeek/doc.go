// Package sockpeek looks at a connection's socket without reading from
// it: whether the peer has closed it, or sent bytes not read yet.
//
// Two places on the request path ask. The proxy looks at an idle pooled
// upstream connection before reusing it, so that a request is never sent
// on a connection the upstream already closed. A request waiting for its
// upstream's answer looks at its client's connection every second, so
// that an upstream request whose client has gone is abandoned (nginx's
// 499) instead of held to its timeout.
package sockpeek
