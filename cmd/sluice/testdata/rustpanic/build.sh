#!/usr/bin/env bash
# Builds filter.wasm with the Rust SDK README's debug build line (the
# name section kept: -C strip=debuginfo), with Debian's rustc and its
# wasm32-wasi standard library (apt-get install rustc libstd-rust-dev-wasm32).
set -euo pipefail
rustc=${RUSTC:-/usr/bin/rustc}
[ -x "$rustc" ] && [ -d "$("$rustc" --print sysroot)/lib/rustlib/wasm32-wasi" ] || { echo "Debian's rustc with the wasm32-wasi std is needed: apt-get install rustc libstd-rust-dev-wasm32"; exit 3; }
sdk=../../../../sdk/rust
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
flags=(--edition 2021 --target wasm32-wasi -C opt-level=s -C panic=abort -C strip=debuginfo -C codegen-units=1 -C link-arg=-zstack-size=65536 --remap-path-prefix "$PWD=." --remap-path-prefix "$(cd "$sdk" && pwd)=sluice")
"$rustc" "${flags[@]}" --crate-type rlib --crate-name sluice -o "$out/libsluice.rlib" "$sdk/src/lib.rs"
"$rustc" "${flags[@]}" --crate-type cdylib --crate-name filter --extern sluice="$out/libsluice.rlib" -L "$out" -o filter.wasm filter.rs
