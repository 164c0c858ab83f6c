#!/usr/bin/env bash
# Builds what a release hands to Python users: one abi3 wheel (CPython 3.9 and newer) and an
# sdist.
#
#   pip install "maturin>=1.9.4,<2"
#   bash bindings/python/build-dist.sh [OUT]        # OUT defaults to target/python-dist
#
# The wheel's platform tag is the manylinux policy it qualifies for: maturin audits the
# native library's symbol versions and tags the wheel with the oldest manylinux policy it
# passes (built on glibc 2.36 that is manylinux_2_34; build on an older glibc, or with
# `--zig --compatibility manylinux2014`, to reach older systems). `--auditwheel check` fails
# the build rather than bundle a library from outside the wheel. Installing the wheel needs
# no Rust toolchain; the sdist needs one (pip builds it with maturin).
#
# Environment: MATURIN (default: maturin on PATH), CARGO_TARGET_DIR as for cargo (default
# target/python).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repository="$(cd "$here/../.." && pwd)"
out="${1:-$repository/target/python-dist}"
maturin="${MATURIN:-maturin}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repository/target/python}"

mkdir -p "$out"
rm -f "$out"/tenure-*.whl "$out"/tenure-*.tar.gz
cd "$here"
"$maturin" build --release --auditwheel check --out "$out"
"$maturin" sdist --out "$out"

wheel="$(ls "$out"/tenure-*.whl)"
sdist="$(ls "$out"/tenure-*.tar.gz)"
case "$(basename "$wheel")" in
  tenure-*-cp39-abi3-manylinux_*.whl) ;;
  *) echo "build-dist: $wheel is not an abi3 manylinux wheel" >&2; exit 1 ;;
esac
# The sdist must hold what a build from it needs — the module's and the engine's sources —
# and no build output.
listing="$(tar -tzf "$sdist")"
for needed in pyproject.toml Cargo.lock bindings/python/src/lib.rs python/tenure/aio/__init__.py \
  crates/tenure/src/lib.rs; do
  if ! grep -q "^tenure-[^/]*/$needed\$" <<<"$listing"; then
    echo "build-dist: $sdist lacks $needed" >&2
    exit 1
  fi
done
if grep -q "/target/" <<<"$listing"; then
  echo "build-dist: $sdist holds build output (a target/ directory)" >&2
  exit 1
fi
echo "build-dist: $(basename "$wheel") and $(basename "$sdist") in $out"
