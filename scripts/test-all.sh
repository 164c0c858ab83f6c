#!/usr/bin/env bash
# tenure's whole test suite: formatting, lints, every test. README command (2).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== %s\n' "$*"; }

step "rustfmt"
cargo fmt --all --check

step "clippy (-D warnings)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "tests"
cargo test --workspace --locked

step "fuzz corpora replayed on stable (with the C ABI target)"
cargo test --locked -p tenure-testkit --features ffi --test fuzz_corpora

step "reliability campaigns: torture --tier ci (release; docs/reliability.md)"
cargo run --release --locked -p tenure-testkit --bin torture -- --tier ci

step "reliability: every cargo-fuzz target for 60 s (RUSTC_BOOTSTRAP=1)"
bash fuzz/run.sh 60

step "quickstart example"
example_directory=$(mktemp -d)
cargo run --quiet --locked -p tenure --example quickstart -- "$example_directory/store"
rm -rf "$example_directory"

step "python module (pytest, stubtest, mypy --strict)"
bash bindings/python/run-tests.sh

step "C ABI: committed header matches cbindgen"
bash bindings/c/check-header.sh

step "C ABI: C and C++ programs (shared + static), valgrind, AddressSanitizer"
bash bindings/c/run-tests.sh
