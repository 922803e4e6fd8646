// Package sluice writes sluice filters in Go: WebAssembly guests of the
// http-wasm http_handler ABI, built with the standard toolchain.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o filter.wasm .
//
// A filter registers its handler in init (a wasip1 reactor never runs
// main) and decides, for each request, whether the next handler runs:
//
//	func init() {
//		sluice.Setup(func() error { return sluice.Config(&cfg) })
//		sluice.Handle(func(req sluice.Request, resp sluice.Response) bool {
//			if strings.HasPrefix(req.Path(), "/admin/") {
//				resp.SetStatus(403)
//				resp.Body().WriteString("forbidden\n")
//				return false // answered: the next handler never runs
//			}
//			req.Header().Set("X-Hello", cfg.Greeting)
//			return true
//		})
//	}
//
//	func main() {}
//
// Instances are pooled: package variables persist across requests, and
// an instance may take other requests while one waits on its upstream.
// Keep per-request state in Request.Set, never in package variables.
// Compiled for any other GOOS, the package talks to the fake host of
// package sluicetest, so filter logic is unit-tested with plain go test.
// sdk/ABI.md in the sluice repository describes the ABI underneath.
package sluice
