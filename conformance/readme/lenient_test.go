//go:build !conformance

package readme

// strict: under plain `go test` a README whose toolchain is missing is
// skipped, and the test says which.
const strict = false
