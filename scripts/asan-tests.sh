#!/usr/bin/env bash
# The Rust test suite of the engine, its test kit and the C ABI crate under AddressSanitizer
# (LeakSanitizer included: it is on by default with ASan on x86_64 Linux).
# Sanitizers are a nightly flag: stable 1.95 takes it with RUSTC_BOOTSTRAP=1. The explicit
# --target keeps build scripts and proc macros uninstrumented; its own target directory keeps
# the instrumented build apart from the normal one.
set -euo pipefail
cd "$(dirname "$0")/.."

export RUSTC_BOOTSTRAP=1
export RUSTFLAGS="-Zsanitizer=address"
export RUSTDOCFLAGS="-Zsanitizer=address"
export CARGO_TARGET_DIR="${ASAN_TARGET_DIR:-target/asan}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
# The damage test repairs a copy of its store per case: a few cases are enough here.
export TENURE_DAMAGE_CASES="${TENURE_DAMAGE_CASES:-3}"
target=$(rustc -vV | sed -n 's/^host: //p')
cargo test --locked -p tenure -p tenure-testkit -p tenure-ffi --target "$target" --lib --tests
