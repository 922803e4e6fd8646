#!/usr/bin/env bash
# Builds cors.wasm with Debian's clang, lld and wasi-libc
# (apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32).
set -euo pipefail
command -v clang >/dev/null && [ -e /usr/lib/wasm32-wasi/libc.a ] || { echo "clang and wasi-libc are needed: apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32"; exit 3; }
sdk=../../sdk/c
clang --target=wasm32-wasi -mexec-model=reactor -Oz -Wl,--strip-all -I "$sdk" -o cors.wasm cors.c "$sdk/sluice.c"
