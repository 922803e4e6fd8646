#!/usr/bin/env bash
# Builds waf.wasm with the standard Go toolchain (GOOS=wasip1).
# coraza.disabled_operators.validateSchema drops an operator the CRS does
# not use (and its JSON-schema library: 5 MB of the module); no_fs_access:
# a guest has no file system (rules come embedded, bodies stay in memory).
# -trimpath and an empty build ID make the output byte-identical across
# machines with the same Go version.
set -euo pipefail
command -v go >/dev/null || { echo "go is needed"; exit 3; }
GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 GOFLAGS=-mod=mod go build -tags no_fs_access,coraza.disabled_operators.validateSchema -buildmode=c-shared -trimpath -buildvcs=false -ldflags=-buildid= -o waf.wasm .
