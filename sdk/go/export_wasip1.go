//go:build wasip1

package sluice

import "github.com/sluicehq/sluice/sdk/go/internal/abi"

const wasm = true

//go:wasmexport handle_request
func exportHandleRequest() uint64 { return abi.Guest.HandleRequest() }

//go:wasmexport handle_response
func exportHandleResponse(reqCtx, isError uint32) { abi.Guest.HandleResponse(reqCtx, isError) }
