// Package h2spec runs h2spec (github.com/summerwind/h2spec), the HTTP/2
// conformance tester, against sluice's HTTP/2: over TLS (ALPN h2, on the
// listener that also serves HTTP/1.1) and cleartext with prior knowledge
// (h2c). The suite is behind the conformance build tag (make conformance).
package h2spec
