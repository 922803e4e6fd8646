// Package tls holds sluice's TLS conformance suites: certificates
// obtained, served and renewed through ACME against Pebble (Let's
// Encrypt's test CA, github.com/letsencrypt/pebble), with both challenge
// types validated for real against sluice's own listeners. The suites
// are behind the conformance build tag (make conformance).
package tls
