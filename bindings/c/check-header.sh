#!/usr/bin/env bash
# Regenerates include/tenure.h with the pinned cbindgen and fails on any difference from the
# committed header. `--write` updates the committed header instead.
# Needs: cargo install cbindgen --locked --version 0.29.2
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
pinned="0.29.2"
cbindgen="${CBINDGEN:-$(command -v cbindgen || echo "$HOME/.cargo/bin/cbindgen")}"
version="$("$cbindgen" --version | awk '{print $2}')"
if [[ "$version" != "$pinned" ]]; then
    echo "cbindgen $pinned is required (found $version): cargo install cbindgen --locked --version $pinned" >&2
    exit 1
fi
generated="$(mktemp)"
trap 'rm -f "$generated"' EXIT
(cd "$root" && "$cbindgen" --quiet --config crates/tenure-ffi/cbindgen.toml --crate tenure-ffi \
    --output "$generated" crates/tenure-ffi)
if [[ "${1:-}" == "--write" ]]; then
    cp "$generated" "$root/include/tenure.h"
    echo "include/tenure.h regenerated"
    exit 0
fi
if ! diff -u "$root/include/tenure.h" "$generated"; then
    echo "include/tenure.h is stale: run bindings/c/check-header.sh --write" >&2
    exit 1
fi
echo "include/tenure.h is up to date"
