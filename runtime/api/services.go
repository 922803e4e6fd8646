package api

import "log/slog"

// Services are what the host offers filters beyond the request they run
// on, whatever their ABI: each ABI binding of the runtime reaches them
// through this one declaration, so that a second ABI (proxy-wasm) needs
// a binding and nothing new here, and the host plugs its own in through
// runtime.EngineOptions.Services (as wazero hands a module its I/O
// through ModuleConfig rather than through a WASI type). The zero value
// gives the defaults of each field.
//
// Host services a later issue adds (calls out to the network, a shared
// store) are declared here when they exist, each with its bounds.
type Services struct {
	// Log receives what guests log (http-wasm's log host function) and
	// write to stdout and stderr under WASI, one record per line, tagged
	// filter=NAME and source=guest, stdout or stderr. Nil means the
	// engine's Logger.
	Log *slog.Logger
}
