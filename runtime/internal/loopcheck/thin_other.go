//go:build !(linux && amd64)

package loopcheck

import "github.com/tetratelabs/wazero"

// Stub is an engine's check stub; there is none on this platform.
type Stub struct{}

// Thin does nothing on this platform: the loop checks exit to Go every
// time, as wazero compiled them. It returns nil.
func Thin(wazero.Runtime) *Stub { return nil }

// Left is how many loop iterations are left before the next exit to Go.
func (*Stub) Left() int64 { return 0 }
