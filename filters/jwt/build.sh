#!/usr/bin/env bash
# Builds jwt.wasm with the standard Go toolchain (GOOS=wasip1).
# -trimpath and an empty build ID make the output byte-identical across
# machines with the same Go version.
set -euo pipefail
command -v go >/dev/null || { echo "go is needed"; exit 3; }
GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 GOFLAGS=-mod=mod go build -buildmode=c-shared -trimpath -buildvcs=false -ldflags=-buildid= -o jwt.wasm .
