#!/usr/bin/env bash
# Installs what the test suite needs and the machine lacks: cbindgen (the C header is diffed
# against it), cargo-deny (licenses, bans, sources), cargo-fuzz (the fuzz targets), clippy and
# rustfmt, valgrind and clang (the C programs), redis-server and memcached (the comparison's
# lease rows), etcd (the etcd backend's cluster).
# Idempotent: a tool at the pinned version is left alone. scripts/test-all.sh runs it first.
set -euo pipefail

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo is missing: install Rust (https://rustup.rs) first" >&2
  exit 1
fi
if command -v rustup >/dev/null 2>&1; then
  rustup component add clippy rustfmt >/dev/null 2>&1 || true
fi

cargo_tool() {
  local command_name="$1" package="$2" version="$3"
  if ! cargo "$command_name" --version 2>/dev/null | grep -q "$version"; then
    echo "installing $package $version"
    cargo install "$package" --locked --version "$version"
  fi
}
if ! cbindgen --version 2>/dev/null | grep -q "0.29.2"; then
  echo "installing cbindgen 0.29.2"
  cargo install cbindgen --locked --version 0.29.2
fi
cargo_tool deny cargo-deny 0.20.2
# 0.13.2 builds on stable Rust.
cargo_tool fuzz cargo-fuzz 0.13.2

missing_packages=()
command -v valgrind >/dev/null 2>&1 || missing_packages+=(valgrind)
command -v redis-server >/dev/null 2>&1 || missing_packages+=(redis-server)
command -v memcached >/dev/null 2>&1 || missing_packages+=(memcached)
command -v pkg-config >/dev/null 2>&1 || missing_packages+=(pkg-config)
# clang: the C programs and the C++ wrapper are also compiled with it.
command -v clang >/dev/null 2>&1 || missing_packages+=(clang)
# etcd 3.4: the etcd backend's tests run against a 3-member cluster (scripts/etcd-cluster.sh).
command -v etcd >/dev/null 2>&1 || missing_packages+=(etcd-server)
if [ "${#missing_packages[@]}" -gt 0 ]; then
  echo "installing ${missing_packages[*]} (Debian packages)"
  sudo_prefix=()
  if [ "$(id -u)" -ne 0 ]; then
    sudo_prefix=(sudo)
  fi
  "${sudo_prefix[@]}" apt-get update
  "${sudo_prefix[@]}" apt-get install -y "${missing_packages[@]}"
fi
