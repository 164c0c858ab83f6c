#!/usr/bin/env bash
# tenure's whole test suite: formatting, lints, every test. README command (2).
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step's title with the seconds the suite has run so far and the disk left where the
# builds go, so a slow step or a filling disk shows in the log.
suite_started=$SECONDS
target_directory="${CARGO_TARGET_DIR:-target}"
mkdir -p "$target_directory"
free_disk() { df -Pm "$target_directory" | awk 'NR == 2 { printf "%.1f GiB free", $4 / 1024 }'; }
step() { printf '\n=== [%4d s, %s] %s\n' "$((SECONDS - suite_started))" "$(free_disk)" "$*"; }
trap 'printf "\n=== [%4d s] done (exit %d)\n" "$((SECONDS - suite_started))" "$?"' EXIT

step "tools the tests need (scripts/install-test-tools.sh)"
bash scripts/install-test-tools.sh

step "rustfmt"
cargo fmt --all --check

step "house rules: module graph (no cycle, imports point down), file sizes, no history in docs"
python3 scripts/module-graph.py
python3 scripts/check-source.py

step "clippy (-D warnings)"
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo clippy -p tenure-benches --features peers --all-targets --locked -- -D warnings
cargo clippy -p tenure --features shuttle --lib --tests --locked -- -D warnings
cargo clippy -p tenure-ffi --features shuttle --lib --tests --locked -- -D warnings

step "cargo-deny: licenses, bans, sources (offline)"
# Every package of the lock file, for every platform: cargo metadata (which cargo-deny runs)
# needs them all, and the builds above fetched only this host's.
cargo fetch --locked
cargo deny --offline --locked check licenses bans sources

step "tests (the etcd backend's against a 3-member cluster, scripts/etcd-cluster.sh)"
bash scripts/etcd-cluster.sh env TENURE_REQUIRE_ETCD=1 cargo test --workspace --locked
# The integration tests' scratch stores (CARGO_TARGET_TMPDIR) are kept for a look after a
# failure; once every test passed they are only disk.
rm -rf "$target_directory/tmp"

step "shuttle: the log's completion protocol, the ordered index and the C handle registry's slot protocol under randomized and PCT schedules"
cargo test --locked -p tenure --features shuttle --lib shuttle_
cargo test --locked -p tenure-ffi --features shuttle --lib shuttle_

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

step "python module (pytest, stubtest, mypy --strict; the etcd stories on a 3-member cluster)"
bash scripts/etcd-cluster.sh env TENURE_REQUIRE_ETCD=1 bash bindings/python/run-tests.sh

step "C ABI: committed header matches cbindgen"
bash bindings/c/check-header.sh

step "C ABI: C and C++ programs (shared + static), valgrind, AddressSanitizer (the etcd stories on a 3-member cluster)"
bash scripts/etcd-cluster.sh env TENURE_REQUIRE_ETCD=1 bash bindings/c/run-tests.sh

step "Rust tests under AddressSanitizer"
bash scripts/asan-tests.sh

step "soak: 8 threads of mixed load with compaction, 2 minutes (the full soak is 10)"
cargo run --release --locked -p tenure-testkit --bin soak -- --duration-seconds 120

step "comparison with the peer engines, quick mode (docs/benchmarks.md has the full run)"
cargo run --release --locked -p tenure-benches --features peers --bin compare -- --quick

step "the Python module beside py-lmdb, sqlite3, redis-py and pymemcache, quick mode (docs/benchmarks-python.md has the full run)"
bash benches/python/run.sh --quick
