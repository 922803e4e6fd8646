//go:build conformance

package readme

// strict: under the conformance tag (make conformance, CI, where .ci/run
// installed every toolchain) a README whose toolchain is missing fails.
const strict = true
