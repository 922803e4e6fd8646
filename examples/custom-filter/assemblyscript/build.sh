#!/usr/bin/env bash
# Builds filter.wasm with the AssemblyScript compiler pinned in
# sdk/assemblyscript/package-lock.json (installed there by npm ci).
set -euo pipefail
command -v npm >/dev/null || { echo "node and npm are needed"; exit 3; }
sdk=../../../sdk/assemblyscript
[ -x "$sdk/node_modules/.bin/asc" ] || (cd "$sdk" && npm ci --no-audit --no-fund >/dev/null) || { echo "npm ci in sdk/assemblyscript failed (is the npm registry reachable?)"; exit 3; }
"$sdk/node_modules/.bin/asc" filter.ts -o filter.wasm --optimize --exportStart _initialize --use abort= --runtime incremental
