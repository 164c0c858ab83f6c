#!/usr/bin/env bash
# Installs the tenure C library from a finished build — it never runs cargo, so it works where
# cargo is not on root's PATH:
#
#   cargo build --profile dist -p tenure-ffi          # as yourself: no debug info (see Cargo.toml)
#   sudo bindings/c/install.sh --prefix /usr/local    # as root, from target/dist
#
#   bindings/c/install.sh [--prefix DIR] [--libdir DIR] [--includedir DIR] [--from DIR]
#                         [--rpath | --no-rpath] [--no-strip] [--no-ldconfig] [PREFIX]
#
# PREFIX (default /usr/local) and the directories must be absolute. DESTDIR stages the files
# for a package: DESTDIR=/tmp/pkg installs into /tmp/pkg/<prefix>, while every installed path
# names <prefix>. --from is the build's directory (default: $CARGO_TARGET_DIR/dist, or
# target/dist; when that has no build, the release build beside it). Installed:
#   <libdir>/libtenure.so.<abi>.<minor>.<patch>, libtenure.so.<abi> -> it, libtenure.so -> that
#   <libdir>/libtenure.a
#   <includedir>/tenure.h, tenure.hpp
#   <libdir>/pkgconfig/tenure.pc          shared:  cc app.c $(pkg-config --cflags --libs tenure)
#   <libdir>/pkgconfig/tenure-static.pc   static:  cc app.c $(pkg-config --cflags --libs tenure-static)
#   <libdir>/cmake/tenure/tenureConfig.cmake, tenureConfigVersion.cmake
#                                         find_package(tenure): tenure::tenure, tenure::tenure_static
# The libraries are stripped of debug info (--no-strip keeps it). tenure.pc carries an rpath to
# <libdir> when the dynamic loader does not search it (--rpath/--no-rpath decide instead), so a
# program built with pkg-config runs without LD_LIBRARY_PATH. Without DESTDIR, as root, and for
# a directory the loader searches, ldconfig runs; otherwise the step to take is printed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

prefix="" libdir="" includedir="" from="" rpath="auto" strip_debug=1 run_ldconfig=1
usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
        --prefix=*) prefix="${1#*=}"; shift ;;
        --libdir) libdir="${2:?--libdir needs a directory}"; shift 2 ;;
        --libdir=*) libdir="${1#*=}"; shift ;;
        --includedir) includedir="${2:?--includedir needs a directory}"; shift 2 ;;
        --includedir=*) includedir="${1#*=}"; shift ;;
        --from) from="${2:?--from needs a directory}"; shift 2 ;;
        --from=*) from="${1#*=}"; shift ;;
        --rpath) rpath=yes; shift ;;
        --no-rpath) rpath=no; shift ;;
        --no-strip) strip_debug=0; shift ;;
        --no-ldconfig) run_ldconfig=0; shift ;;
        -h|--help) usage ;;
        -*) echo "install.sh: unknown option $1" >&2; usage ;;
        *) [[ -z "$prefix" ]] || { echo "install.sh: one PREFIX only" >&2; exit 2; }; prefix="$1"; shift ;;
    esac
done
prefix="${prefix:-/usr/local}"
libdir="${libdir:-$prefix/lib}"
includedir="${includedir:-$prefix/include}"
for directory in "$prefix" "$libdir" "$includedir"; do
    if [[ "$directory" != /* ]]; then
        echo "install.sh: '$directory' is not an absolute directory; the paths written into" \
            "tenure.pc and the CMake files must be, e.g. --prefix \"\$PWD/$directory\"" >&2
        exit 2
    fi
done
prefix="${prefix%/}" libdir="${libdir%/}" includedir="${includedir%/}"
prefix="${prefix:-/}"
destdir="${DESTDIR:-}"

if [[ -z "$from" ]]; then
    # The dist build, else the release build (its debug info is stripped below).
    target="${CARGO_TARGET_DIR:-$root/target}"
    from="$target/dist"
    [[ -f "$from/libtenure_ffi.so" || ! -f "$target/release/libtenure_ffi.so" ]] || from="$target/release"
fi
shared="$from/libtenure_ffi.so"
static="$from/libtenure_ffi.a"
if [[ ! -f "$shared" || ! -f "$static" ]]; then
    echo "install.sh: no libtenure_ffi.so and libtenure_ffi.a in $from. Build first (as" \
        "yourself): cargo build --profile dist -p tenure-ffi, or pass --from DIR" >&2
    exit 1
fi
header="$root/include/tenure.h"
version="$(sed -n 's/^#define TENURE_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' "$header" | paste -sd.)"
abi="$(sed -n 's/^#define TENURE_ABI_VERSION \([0-9]*\)$/\1/p' "$header")"
soname="libtenure.so.$abi"
realname="libtenure.so.$abi.${version#*.}"
if command -v readelf >/dev/null; then
    built="$(readelf -d "$shared" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
    if [[ "$built" != "$soname" ]]; then
        echo "install.sh: $shared has SONAME '${built:-none}', not $soname: rebuild it" >&2
        exit 1
    fi
fi

install -d "$destdir$libdir/pkgconfig" "$destdir$libdir/cmake/tenure" "$destdir$includedir"
install -m 0755 "$shared" "$destdir$libdir/$realname"
ln -sfn "$realname" "$destdir$libdir/$soname"
ln -sfn "$soname" "$destdir$libdir/libtenure.so"
install -m 0644 "$static" "$destdir$libdir/libtenure.a"
install -m 0644 "$header" "$root/include/tenure.hpp" "$destdir$includedir/"
if [[ "$strip_debug" == 1 ]]; then
    if command -v strip >/dev/null; then
        strip --strip-debug "$destdir$libdir/$realname" "$destdir$libdir/libtenure.a"
    else
        echo "install.sh: no strip command; the libraries keep whatever debug info they have" >&2
    fi
fi

# The directories the dynamic loader searches without help: its defaults and those of
# /etc/ld.so.conf (ldconfig -v -N lists them).
multiarch="$( (gcc -print-multiarch || cc -print-multiarch) 2>/dev/null || true)"
loader_searches() {
    local directory="$1" candidate
    for candidate in /lib /lib64 /usr/lib /usr/lib64 ${multiarch:+/lib/$multiarch /usr/lib/$multiarch}; do
        [[ "$directory" == "$candidate" ]] && return 0
    done
    if command -v ldconfig >/dev/null; then
        ldconfig -v -N 2>/dev/null | grep -q "^$directory:" && return 0
    fi
    return 1
}
if [[ "$rpath" == auto ]]; then
    if loader_searches "$libdir"; then rpath=no; else rpath=yes; fi
fi

# libdir and includedir as pkg-config variables, relative to the prefix where they are under it.
relative_to_prefix() {
    local path="$1" variable="$2"
    if [[ "$prefix" != / && "$path" == "$prefix"/* ]]; then
        echo "\${$variable}${path#"$prefix"}"
    else
        echo "$path"
    fi
}
pc_libdir="$(relative_to_prefix "$libdir" exec_prefix)"
pc_includedir="$(relative_to_prefix "$includedir" prefix)"
# What the Rust standard library in libtenure.a needs (rustc --print native-static-libs).
native_libs="-lgcc_s -lutil -lrt -lpthread -lm -ldl"
rpath_flag=""
[[ "$rpath" == yes ]] && rpath_flag=" -Wl,-rpath,\${libdir}"
cat > "$destdir$libdir/pkgconfig/tenure.pc" <<PC
prefix=$prefix
exec_prefix=\${prefix}
libdir=$pc_libdir
includedir=$pc_includedir

Name: tenure
Description: Embedded key/value store with ETags, leases and cache locks: the C ABI (shared library; static: tenure-static)
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -ltenure$rpath_flag
PC
cat > "$destdir$libdir/pkgconfig/tenure-static.pc" <<PC
prefix=$prefix
exec_prefix=\${prefix}
libdir=$pc_libdir
includedir=$pc_includedir

Name: tenure-static
Description: Embedded key/value store with ETags, leases and cache locks: the C ABI (static library)
Version: $version
Cflags: -I\${includedir}
Libs: \${libdir}/libtenure.a $native_libs
PC

# CMake: paths relative to the config file, so a staged (DESTDIR) or moved tree still works.
cmake_dir="$libdir/cmake/tenure"
to_libdir="$(realpath -m --relative-to="$cmake_dir" "$libdir")"
to_includedir="$(realpath -m --relative-to="$cmake_dir" "$includedir")"
cat > "$destdir$cmake_dir/tenureConfig.cmake" <<CMAKE
# tenure's CMake package (bindings/c/install.sh): find_package(tenure) gives
#   tenure::tenure         the shared library ($soname)
#   tenure::tenure_static  the static library, with what it needs to link
get_filename_component(_tenure_libdir "\${CMAKE_CURRENT_LIST_DIR}/$to_libdir" ABSOLUTE)
get_filename_component(_tenure_includedir "\${CMAKE_CURRENT_LIST_DIR}/$to_includedir" ABSOLUTE)
if(NOT TARGET tenure::tenure)
  add_library(tenure::tenure SHARED IMPORTED)
  set_target_properties(tenure::tenure PROPERTIES
    IMPORTED_LOCATION "\${_tenure_libdir}/$realname"
    IMPORTED_SONAME "$soname"
    INTERFACE_INCLUDE_DIRECTORIES "\${_tenure_includedir}")
endif()
if(NOT TARGET tenure::tenure_static)
  set(THREADS_PREFER_PTHREAD_FLAG ON)
  find_package(Threads REQUIRED)
  add_library(tenure::tenure_static STATIC IMPORTED)
  set_target_properties(tenure::tenure_static PROPERTIES
    IMPORTED_LOCATION "\${_tenure_libdir}/libtenure.a"
    INTERFACE_INCLUDE_DIRECTORIES "\${_tenure_includedir}"
    INTERFACE_LINK_LIBRARIES "Threads::Threads;\${CMAKE_DL_LIBS};m;rt;util;gcc_s")
endif()
unset(_tenure_libdir)
unset(_tenure_includedir)
CMAKE
cat > "$destdir$cmake_dir/tenureConfigVersion.cmake" <<CMAKE
# A request is met by the same major version at least as new (for 0.x, the same minor).
set(PACKAGE_VERSION "$version")
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
elseif(NOT PACKAGE_FIND_VERSION_MAJOR EQUAL "${version%%.*}")
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
elseif("${version%%.*}" EQUAL 0 AND NOT PACKAGE_FIND_VERSION_MINOR EQUAL "$(echo "$version" | cut -d. -f2)")
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
CMAKE

echo "installed tenure $version (ABI $abi, $soname) into $destdir$prefix"
if [[ -n "$destdir" ]]; then
    echo "staged under DESTDIR: run ldconfig after the files reach $libdir (a package's post-install step)"
elif [[ "$run_ldconfig" == 1 && "$rpath" == no && "$(id -u)" == 0 ]] && command -v ldconfig >/dev/null; then
    ldconfig
    echo "ran ldconfig"
elif [[ "$rpath" == no ]]; then
    echo "run ldconfig as root so the dynamic loader finds $soname in $libdir"
else
    echo "$libdir is not a directory the dynamic loader searches: programs built with" \
        "pkg-config --libs tenure get an rpath to it; for others, add it to /etc/ld.so.conf.d/" \
        "and run ldconfig, or set LD_LIBRARY_PATH"
fi
