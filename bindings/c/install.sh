#!/usr/bin/env bash
# Installs the tenure C library, headers and a generated pkg-config file:
#   bindings/c/install.sh /usr/local        (builds release first; PREFIX defaults to /usr/local)
# Then: gcc app.c $(pkg-config --cflags --libs tenure)      (static: pkg-config --static)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
prefix="${1:-/usr/local}"
target="${CARGO_TARGET_DIR:-$root/target}"
(cd "$root" && cargo build --release -p tenure-ffi)
version="$(sed -n 's/^#define TENURE_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' "$root/include/tenure.h" | paste -sd.)"
mkdir -p "$prefix/lib/pkgconfig" "$prefix/include"
install -m 0644 "$target/release/libtenure_ffi.a" "$prefix/lib/"
install -m 0755 "$target/release/libtenure_ffi.so" "$prefix/lib/"
install -m 0644 "$root/include/tenure.h" "$root/include/tenure.hpp" "$prefix/include/"
cat > "$prefix/lib/pkgconfig/tenure.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: tenure
Description: Embedded key/value engine with ETags, leases and cache locks (C ABI)
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -ltenure_ffi
Libs.private: -lpthread -ldl -lm
PC
echo "installed tenure $version into $prefix"
