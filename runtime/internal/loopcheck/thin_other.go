//go:build !(linux && amd64)

package loopcheck

import (
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Thin does nothing on this platform: the loop checks exit to Go every
// time, as wazero compiled them. It reports false.
func Thin(wazero.Runtime) bool { return false }

// Left is -1 on this platform.
func Left(api.Function) int64 { return -1 }
