// Package crs runs the OWASP Core Rule Set's own regression suite
// against the sluice binary with the waf filter (filters/waf) in front of
// an echo backend, driven by go-ftw as a library. It is a module of its
// own so that go-ftw's dependencies stay out of sluice's go.mod. The
// test is behind the `conformance` build tag (make conformance).
package crs
