#!/usr/bin/env bash
# Builds the tenure C library (release), compiles the C test programs against the shared AND
# the static library with -std=c11 -Wall -Wextra -Werror -pedantic, runs them, and runs them
# again under valgrind memcheck (0 errors, 0 leaks).
#   bindings/c/run-tests.sh            everything
#   SKIP_VALGRIND=1 bindings/c/run-tests.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
out="${TENURE_C_OUT:-$target/c-tests}"
mkdir -p "$out"

(cd "$root" && cargo build --release -p tenure-ffi)
lib="$target/release"
test -f "$lib/libtenure_ffi.so" && test -f "$lib/libtenure_ffi.a"

cflags=(-std=c11 -Wall -Wextra -Werror -pedantic -g -I"$root/include" -I"$here")
programs=(scenarios containers_metadata bad_inputs bad_handles)
# fork runs plainly only: its child leaves the inherited store's memory to the process's end
# by design, which valgrind and LeakSanitizer would report as leaks of the child.
for program in "${programs[@]}" fork; do
    gcc "${cflags[@]}" "$here/$program.c" -o "$out/$program-shared" \
        -L"$lib" -ltenure_ffi -Wl,-rpath,"$lib" -lpthread
    gcc "${cflags[@]}" "$here/$program.c" -o "$out/$program-static" \
        "$lib/libtenure_ffi.a" -lpthread -ldl -lm
done
# The C++ wrapper (bindings/cpp): the same scenarios through tenure.hpp, both headers included
# twice; shared and static like the C programs.
cxxflags=(-std=c++17 -Wall -Wextra -Werror -pedantic -g -I"$root/include")
g++ "${cxxflags[@]}" "$root/bindings/cpp/scenarios.cpp" -o "$out/cpp_scenarios-shared" \
    -L"$lib" -ltenure_ffi -Wl,-rpath,"$lib" -lpthread
g++ "${cxxflags[@]}" "$root/bindings/cpp/scenarios.cpp" -o "$out/cpp_scenarios-static" \
    "$lib/libtenure_ffi.a" -lpthread -ldl -lm
run_programs=("${programs[@]}" cpp_scenarios)

# The header compiles as C++ too, and twice in one unit.
printf '#include "tenure.h"\n#include "tenure.h"\nint main(void) { return tenure_status_http(TENURE_OK) == 200 ? 0 : 1; }\n' \
    > "$out/twice.c"
gcc "${cflags[@]}" "$out/twice.c" -o "$out/twice" "$lib/libtenure_ffi.a" -lpthread -ldl -lm
"$out/twice"
if command -v g++ >/dev/null; then
    g++ -std=c++17 -Wall -Wextra -Werror -pedantic -I"$root/include" -x c++ "$out/twice.c" -x none \
        -o "$out/twice-cpp" "$lib/libtenure_ffi.a" -lpthread -ldl -lm
    "$out/twice-cpp"
fi

for program in "${run_programs[@]}" fork; do
    for linkage in shared static; do
        echo "== $program ($linkage)"
        "$out/$program-$linkage"
    done
done

if [[ -z "${SKIP_VALGRIND:-}" ]]; then
    for program in "${run_programs[@]}"; do
        for linkage in shared static; do
            echo "== $program ($linkage) under valgrind"
            valgrind --quiet --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
                --suppressions="$here/valgrind.supp" \
                "$out/$program-$linkage"
        done
    done
fi
# The install script and its generated pkg-config file.
if command -v pkg-config >/dev/null; then
    CARGO_TARGET_DIR="$target" "$here/install.sh" "$out/prefix" >/dev/null
    PKG_CONFIG_PATH="$out/prefix/lib/pkgconfig" pkg-config --modversion tenure | grep -qx \
        "$(grep -m1 '^version' "$root/Cargo.toml" | sed 's/.*"\(.*\)"/\1/')"
    gcc "${cflags[@]}" "$here/scenarios.c" -o "$out/scenarios-pkgconfig" \
        $(PKG_CONFIG_PATH="$out/prefix/lib/pkgconfig" pkg-config --cflags --libs tenure) \
        -Wl,-rpath,"$out/prefix/lib" -lpthread
    "$out/scenarios-pkgconfig" >/dev/null
    echo "== install.sh + tenure.pc: ok"
fi

# AddressSanitizer (+UBSan) on the C side, linked against the static library.
if [[ -z "${SKIP_ASAN:-}" ]]; then
    for program in "${programs[@]}"; do
        gcc "${cflags[@]}" -fsanitize=address,undefined -fno-omit-frame-pointer "$here/$program.c" \
            -o "$out/$program-asan" "$lib/libtenure_ffi.a" -lpthread -ldl -lm
        echo "== $program under AddressSanitizer (C side)"
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1 "$out/$program-asan"
    done
fi

# AddressSanitizer on both sides (the Rust library built with -Zsanitizer=address; slow, so
# opt-in): TENURE_RUST_ASAN=1.
if [[ -n "${TENURE_RUST_ASAN:-}" ]]; then
    asan_target="$target/asan"
    (cd "$root" && RUSTC_BOOTSTRAP=1 RUSTFLAGS="-Zsanitizer=address" \
        cargo build --release -p tenure-ffi --target x86_64-unknown-linux-gnu --target-dir "$asan_target")
    asan_lib="$asan_target/x86_64-unknown-linux-gnu/release/libtenure_ffi.a"
    for program in "${programs[@]}"; do
        gcc "${cflags[@]}" -fsanitize=address -fno-omit-frame-pointer "$here/$program.c" \
            -o "$out/$program-asan-both" "$asan_lib" -lpthread -ldl -lm
        echo "== $program under AddressSanitizer (C and Rust)"
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 "$out/$program-asan-both"
    done
fi
echo "C ABI tests: all passed"
