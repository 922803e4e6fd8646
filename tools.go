//go:build tools

// Package tools pins dependencies that parts of the tree import, so that
// `go mod tidy` keeps them while those parts are written.
package tools

import (
	_ "github.com/andybalholm/brotli"
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/hashicorp/hcl/v2"
	_ "github.com/http-wasm/http-wasm-host-go/tck"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/tetratelabs/wazero"
	_ "github.com/valyala/fasthttp"
	_ "github.com/zclconf/go-cty/cty"
	_ "go.opentelemetry.io/otel"
	_ "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	_ "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	_ "go.opentelemetry.io/otel/sdk/trace"
	_ "golang.org/x/crypto/acme"
	_ "golang.org/x/net/http2"
	_ "golang.org/x/sys/unix"
)
