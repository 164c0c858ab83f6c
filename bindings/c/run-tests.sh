#!/usr/bin/env bash
# The C ABI as a C or C++ programmer uses it: builds the release library, installs it into a
# scratch prefix with install.sh, and builds every test program from that prefix through
# pkg-config only — shared (tenure.pc) and static (tenure-static.pc), as C99 and C11 with gcc
# and clang under -Wall -Wextra -pedantic -Wconversion -Werror, the C++ wrapper as C++17 and
# C++20 with g++ and clang++. Runs them, then under valgrind memcheck (0 errors, 0 leaks) and
# AddressSanitizer+UBSan; checks the install itself (no LD_LIBRARY_PATH needed, a static link
# with no libtenure.so, DESTDIR staging, a relative prefix refused, CMake's find_package).
#   bindings/c/run-tests.sh
#   SKIP_VALGRIND=1 SKIP_ASAN=1 bindings/c/run-tests.sh     while iterating
#   TENURE_RUST_ASAN=1 bindings/c/run-tests.sh              also ASan in the Rust library (slow)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
out="${TENURE_C_OUT:-$target/c-tests}"
rm -rf "$out"
mkdir -p "$out"

(cd "$root" && cargo build --release -p tenure-ffi)
lib="$target/release"

# ----- install into a scratch prefix, as a user would (debug info kept for the reports) -----
prefix="$out/prefix"
"$here/install.sh" --from "$lib" --prefix "$prefix" --no-strip > "$out/install.log"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
read -r -a shared_flags <<< "$(pkg-config --cflags --libs tenure)"
read -r -a static_flags <<< "$(pkg-config --static --cflags --libs tenure-static)"
read -r -a include_flags <<< "$(pkg-config --cflags tenure)"

cflags=(-Wall -Wextra -pedantic -Wconversion -Werror -g -I"$here")
# The tests of the 0.1 forms (kept for one release) call them on purpose.
legacy=(-DTENURE_NO_DEPRECATION_WARNINGS)
# Programs of the current calls, and of the 0.1 forms.
programs=(scenarios error_state views options read_only full_disk etcd)
legacy_programs=(containers_metadata bad_inputs bad_handles)
build_c() { # program compiler standard linkage output
    local program="$1" compiler="$2" standard="$3" linkage="$4" output="$5" extra=()
    [[ " ${legacy_programs[*]} fork " == *" $program "* ]] && extra=("${legacy[@]}")
    local link=("${shared_flags[@]}")
    [[ "$linkage" == static ]] && link=("${static_flags[@]}")
    "$compiler" -std="$standard" "${cflags[@]}" "${extra[@]}" "$here/$program.c" -o "$output" \
        "${link[@]}" -lpthread
}

# Every program, every compiler and standard, shared; the gcc C11 build static too.
echo "== compile: C99 and C11, gcc and clang, shared and static"
variants=()
for program in "${programs[@]}" "${legacy_programs[@]}" fork; do
    for compiler in gcc clang; do
        for standard in c99 c11; do
            build_c "$program" "$compiler" "$standard" shared "$out/$program-$compiler-$standard"
            variants+=("$program-$compiler-$standard")
        done
    done
    build_c "$program" gcc c11 static "$out/$program-static"
    variants+=("$program-static")
done

# The C++ wrapper: C++17 and C++20 (std::span), g++ and clang++, shared; g++ static.
cxxflags=(-Wall -Wextra -pedantic -Wconversion -Werror -g)
cpp_programs=(cpp_scenarios cpp_wrapper)
echo "== compile: the C++ wrapper as C++17 and C++20, g++ and clang++"
for program in "${cpp_programs[@]}"; do
    source="$root/bindings/cpp/${program#cpp_}.cpp"
    for compiler in g++ clang++; do
        for standard in c++17 c++20; do
            "$compiler" -std="$standard" "${cxxflags[@]}" "$source" -o "$out/$program-$compiler-$standard" \
                "${shared_flags[@]}" -lpthread
            variants+=("$program-$compiler-$standard")
        done
    done
    g++ -std=c++17 "${cxxflags[@]}" "$source" -o "$out/$program-static" "${static_flags[@]}" -lpthread
    variants+=("$program-static")
done
# Below C++17 the wrapper says so, in one error, instead of a wall of them.
printf '#include "tenure.hpp"\nint main() { return 0; }\n' > "$out/cpp14.cpp"
for compiler in g++ clang++; do
    if "$compiler" -std=c++14 "${cxxflags[@]}" -fsyntax-only "$out/cpp14.cpp" "${include_flags[@]}" \
        2> "$out/cpp14.log"; then
        echo "tenure.hpp compiled as C++14" >&2
        exit 1
    fi
    grep -q "tenure.hpp requires C++17 or newer" "$out/cpp14.log"
    [[ "$(grep -c "error:" "$out/cpp14.log")" -eq 1 ]] || { cat "$out/cpp14.log" >&2; exit 1; }
done
# tenure.h: C89 is refused with the same clarity, and the header works included twice, in C
# and in C++.
printf '#include "tenure.h"\nint main(void) { return 0; }\n' > "$out/c89.c"
if gcc -std=c89 -pedantic "${include_flags[@]}" -fsyntax-only "$out/c89.c" 2> "$out/c89.log"; then
    echo "tenure.h compiled as C89" >&2
    exit 1
fi
grep -q "tenure.h needs C99 or newer" "$out/c89.log"
printf '#include "tenure.h"\n#include "tenure.h"\nint main(void) { return tenure_status_http(TENURE_OK) == 200 ? 0 : 1; }\n' \
    > "$out/twice.c"
gcc -std=c99 "${cflags[@]}" "$out/twice.c" -o "$out/twice" "${static_flags[@]}"
g++ -std=c++17 "${cxxflags[@]}" -x c++ "$out/twice.c" -x none -o "$out/twice-cpp" "${shared_flags[@]}"
"$out/twice"
"$out/twice-cpp"

# ----- run everything (fork plainly only: its child leaves the inherited store's memory to
# the process's end by design, which valgrind and LeakSanitizer would report) -----
for variant in "${variants[@]}"; do
    echo "== $variant"
    # No LD_LIBRARY_PATH: the shared builds find libtenure.so.0 through tenure.pc's rpath.
    env -u LD_LIBRARY_PATH "$out/$variant" > "$out/$variant.log" || { cat "$out/$variant.log"; exit 1; }
    tail -n 1 "$out/$variant.log"
done

# ----- the install as packagers and users meet it -----
echo "== install: linking, rpath, static, DESTDIR, relative prefix, CMake"
# A program built with nothing but pkg-config records libtenure.so.0 and runs without
# LD_LIBRARY_PATH; with tenure-static.pc it has no dependency on the shared library.
# shellcheck disable=SC2046
gcc "$here/install-app.c" -o "$out/app-shared" $(pkg-config --cflags --libs tenure)
# shellcheck disable=SC2046
gcc "$here/install-app.c" -o "$out/app-static" $(pkg-config --static --cflags --libs tenure-static)
env -u LD_LIBRARY_PATH "$out/app-shared"
"$out/app-static"
for program in app-shared scenarios-gcc-c11; do
    readelf -d "$out/$program" | grep -q 'NEEDED.*\[libtenure.so.0\]'
done
for program in app-static scenarios-static cpp_wrapper-static; do
    if ldd "$out/$program" | grep -q libtenure; then
        echo "$program depends on libtenure.so" >&2
        exit 1
    fi
done
test "$(readlink "$prefix/lib/libtenure.so")" = libtenure.so.0
test "$(readlink "$prefix/lib/libtenure.so.0")" = "libtenure.so.0.$(pkg-config --modversion tenure | cut -d. -f2-)"
pkg-config --modversion tenure | grep -qx "$(grep -m1 '^version' "$root/Cargo.toml" | sed 's/.*"\(.*\)"/\1/')"
# DESTDIR stages the files; every path written names the final prefix.
DESTDIR="$out/stage" "$here/install.sh" --from "$lib" --prefix /opt/tenure --no-strip > /dev/null
test -f "$out/stage/opt/tenure/include/tenure.hpp" -a -L "$out/stage/opt/tenure/lib/libtenure.so.0"
grep -qx 'prefix=/opt/tenure' "$out/stage/opt/tenure/lib/pkgconfig/tenure.pc"
if grep -rq "$out/stage" "$out/stage/opt/tenure/lib/pkgconfig" "$out/stage/opt/tenure/lib/cmake"; then
    echo "DESTDIR leaked into an installed file" >&2
    exit 1
fi
# A relative prefix is refused; nothing is installed.
if (cd "$out" && "$here/install.sh" --from "$lib" relative-prefix > /dev/null 2>&1); then
    echo "install.sh accepted a relative prefix" >&2
    exit 1
fi
test ! -e "$out/relative-prefix"
# Without --from: the dist build, else the release build; with neither, a message to build.
mkdir -p "$out/fake-target/release"
ln -s "$lib/libtenure_ffi.so" "$lib/libtenure_ffi.a" "$out/fake-target/release/"
CARGO_TARGET_DIR="$out/fake-target" "$here/install.sh" --prefix "$out/from-release" > /dev/null
test -f "$out/from-release/lib/libtenure.a"
if CARGO_TARGET_DIR="$out/no-target" "$here/install.sh" --prefix "$out/no-build" 2> "$out/no-build.log"; then
    echo "install.sh installed without a build" >&2
    exit 1
fi
grep -q "Build first" "$out/no-build.log"
# The install needs no cargo: it runs with cargo off the PATH.
env PATH=/usr/bin:/bin "$here/install.sh" --from "$lib" --prefix "$out/no-cargo" --no-strip > /dev/null
# Stripping at install (the default) leaves no debug sections.
"$here/install.sh" --from "$lib" --prefix "$out/stripped" > /dev/null
if readelf -S "$out/stripped/lib/libtenure.so.0."* | grep -q '\.debug_info'; then
    echo "the installed shared library kept its debug info" >&2
    exit 1
fi
if command -v cmake > /dev/null; then
    mkdir -p "$out/cmake-app"
    cp "$here/install-app.c" "$out/cmake-app/app.c"
    cat > "$out/cmake-app/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.13)
project(tenure_app C)
find_package(tenure 0.1 REQUIRED)
add_executable(app_shared app.c)
target_link_libraries(app_shared PRIVATE tenure::tenure)
add_executable(app_static app.c)
target_link_libraries(app_static PRIVATE tenure::tenure_static)
CMAKE
    cmake -S "$out/cmake-app" -B "$out/cmake-app/build" -DCMAKE_PREFIX_PATH="$prefix" > "$out/cmake.log"
    cmake --build "$out/cmake-app/build" >> "$out/cmake.log"
    env -u LD_LIBRARY_PATH "$out/cmake-app/build/app_shared"
    "$out/cmake-app/build/app_static"
    if ldd "$out/cmake-app/build/app_static" | grep -q libtenure; then
        echo "tenure::tenure_static depends on libtenure.so" >&2
        exit 1
    fi
else
    echo "(cmake not installed: find_package(tenure) not checked)"
fi
echo "== install: ok"

if [[ -z "${SKIP_VALGRIND:-}" ]]; then
    for variant in "${programs[@]/%/-gcc-c11}" "${legacy_programs[@]/%/-gcc-c11}" \
        scenarios-static views-static cpp_scenarios-g++-c++17 cpp_wrapper-g++-c++20; do
        echo "== $variant under valgrind"
        valgrind --quiet --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
            --suppressions="$here/valgrind.supp" "$out/$variant" > /dev/null
    done
fi

# AddressSanitizer (+UBSan) on the C and C++ side, linked against the static library.
if [[ -z "${SKIP_ASAN:-}" ]]; then
    sanitize=(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
    for program in "${programs[@]}" "${legacy_programs[@]}"; do
        extra=()
        [[ " ${legacy_programs[*]} " == *" $program "* ]] && extra=("${legacy[@]}")
        gcc -std=c11 "${cflags[@]}" "${extra[@]}" "${sanitize[@]}" "$here/$program.c" \
            -o "$out/$program-asan" "${static_flags[@]}" -lpthread
        echo "== $program under AddressSanitizer (C side)"
        "$out/$program-asan" > /dev/null
    done
    clang -std=c99 "${cflags[@]}" "${sanitize[@]}" "$here/views.c" -o "$out/views-asan-clang" \
        "${static_flags[@]}" -lpthread
    echo "== views under AddressSanitizer (clang)"
    "$out/views-asan-clang" > /dev/null
    for program in "${cpp_programs[@]}"; do
        g++ -std=c++17 "${cxxflags[@]}" "${sanitize[@]}" "$root/bindings/cpp/${program#cpp_}.cpp" \
            -o "$out/$program-asan" "${static_flags[@]}" -lpthread
        echo "== $program under AddressSanitizer (C++ side)"
        "$out/$program-asan" > /dev/null
    done
fi

# AddressSanitizer on both sides (the Rust library built with -Zsanitizer=address; slow, so
# opt-in): TENURE_RUST_ASAN=1.
if [[ -n "${TENURE_RUST_ASAN:-}" ]]; then
    asan_target="$target/asan"
    (cd "$root" && RUSTC_BOOTSTRAP=1 RUSTFLAGS="-Zsanitizer=address" \
        cargo build --release -p tenure-ffi --target x86_64-unknown-linux-gnu --target-dir "$asan_target")
    asan_lib="$asan_target/x86_64-unknown-linux-gnu/release/libtenure_ffi.a"
    native=$(pkg-config --libs tenure-static | sed 's|[^ ]*libtenure.a||')
    for program in "${programs[@]}" "${legacy_programs[@]}"; do
        extra=()
        [[ " ${legacy_programs[*]} " == *" $program "* ]] && extra=("${legacy[@]}")
        # shellcheck disable=SC2086
        gcc -std=c11 "${cflags[@]}" "${extra[@]}" -I"$prefix/include" -fsanitize=address -fno-omit-frame-pointer \
            "$here/$program.c" -o "$out/$program-asan-both" "$asan_lib" $native
        echo "== $program under AddressSanitizer (C and Rust)"
        "$out/$program-asan-both" > /dev/null
    done
fi
echo "C ABI tests: all passed"
