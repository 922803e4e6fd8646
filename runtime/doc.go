// Package runtime runs sluice's filters: WebAssembly guests written
// against the http-wasm "http_handler" ABI, compiled by wazero, pooled,
// called with a deadline, traced, and swapped while the server runs.
//
// # Where it sits on the request path
//
// The host builds one Engine per process and, per config generation (a config load), one
// Filter per configured filter. For each request its filter chain calls
// Filter.Request in declared order; a guest either answers (the zero Call
// is returned; the response is already in the exchange) or continues (a
// Call is returned, by value, so that the chain keeps it on its stack;
// HandleRequest is the same returning a *Call). After the native handler ran, the host calls
// Call.HandleResponse in reverse order, also when the handler failed
// (isError), or Call.Release when it gives up on the request. A request
// never compiles or instantiates anything: both happen in Compile,
// NewFilter and Swap, off the request path.
//
// The package's Example (example_test.go, run by go test) is that life in
// code: NewEngine, Compile, NewFilter, HandleRequest, HandleResponse,
// Close; Filter.HandleRequest, Filter.Swap and SetupError have their own.
// runtime/filtertest is the in-memory HTTP they use, and filter authors
// too.
//
// # Public surface
//
//   - HTTP: what a guest reads and writes, declared once in runtime/api
//     (which the host's exchange.Exchange embeds); ReadDeadliner and
//     BodyBufferer, what an HTTP may add.
//   - Engine (NewEngine, Compile, NewFilter, Close) and EngineOptions,
//     whose Services (declared in runtime/api) are the host services a
//     filter may use beyond its request, whatever its ABI.
//   - Module (Digest, Close): a compiled guest shared by digest.
//   - Filter (Request, HandleRequest, Features, Swap, Watch, Stats, Close),
//     FilterOptions, WASIOptions, FilterStats; Reset and its constants
//     (when an instance goes back to the snapshot of the guest's start-up).
//   - Call (HandleResponse, Release, Features, Continues).
//   - Features and its constants; Observer and the Outcome constants;
//     the Err sentinel errors; SetupError, a guest that failed to start
//     (NewFilter, Swap).
//
// Errors from calls read `filter "NAME": handle_request: <sentinel>:
// <cause>`. A trap, timeout or memory-cap failure fails its own request
// only, and the response header changes of the failed call are undone;
// its instance is replaced in the background.
//
// # Imports
//
// runtime is the only tree of sluice that imports wazero. It imports the
// standard library, wazero, OpenTelemetry and fsnotify, and nothing of
// host or config: the HTTP side reaches it through the HTTP interface of
// runtime/api, a leaf the host imports too. The details live under
// runtime/internal: core (the ABI-neutral instance: its module, memory
// cap, snapshot state and the deadline of its calls), httpwasm (the
// http-wasm binding: its host functions, the check of a guest's imports
// and exports, the phase rules), pool
// (idle instances and reference counts), memlimit (the per-instance
// memory cap), guestlog (WASI output to the log), interrupt (stopping a
// guest at its deadline without a goroutine per call, and resuming it for
// the requests that wait on it), loopcheck (loop checks that mostly
// return without leaving the guest), snapshot (instances made from a
// snapshot of the guest's start-up). runtime/filtertest is the in-memory
// HTTP and a runner for tests. Why it is built this way is in
// RATIONALE.md; the ABI as implemented, with every host-specific
// decision, is in sdk/ABI.md ("As implemented").
package runtime
