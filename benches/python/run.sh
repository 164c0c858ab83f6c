#!/usr/bin/env bash
# tenure's Python module beside py-lmdb, sqlite3, redis-py and pymemcache.
#
#   benches/python/run.sh --quick    # smoke run, about a minute after the build (the default)
#   benches/python/run.sh --full     # full run, written to docs/benchmarks-python.md
#   benches/python/run.sh --quick --engines tenure,lmdb   # anything after the mode goes to compare.py
#
# 1. redis-server and memcached: used from the PATH; one that is missing is installed with
#    `apt-get install -y` when running as root on Debian, otherwise compare.py leaves that engine
#    out and its report says so;
# 2. a virtualenv with maturin, lmdb, redis and pymemcache from PyPI;
# 3. `pip install ./bindings/python`: the release build a user's pip runs, into CARGO_TARGET_DIR
#    (default target/python, the build the Python test suite shares), under `nice -n 5`;
# 4. benches/python/compare.py, from the repository root.
#
# Environment: PYTHON (default python3, 3.9 or newer), TENURE_PYBENCH_VENV (default
# target/pybench-venv), CARGO_TARGET_DIR (default target/python), CARGO_BUILD_JOBS as for cargo.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repository="$(cd "$here/../.." && pwd)"
python="${PYTHON:-python3}"
venv="${TENURE_PYBENCH_VENV:-$repository/target/pybench-venv}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repository/target/python}"

mode="--quick"
if [ $# -gt 0 ]; then
  case "$1" in
    --quick | --full) mode="$1"; shift ;;
  esac
fi

step() { printf '\n=== pybench: %s\n' "$*" >&2; }

# Installs a Debian package when its program is missing and we may (root, apt-get present).
# Never fails the run: compare.py reports an engine whose server is missing.
ensure_program() {
  local program="$1" package="$2"
  if command -v "$program" >/dev/null 2>&1; then
    return 0
  fi
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    step "$program is missing: apt-get install -y $package"
    # A fresh machine may have no package lists yet: update once and retry.
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y "$package" >&2; then
      apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y "$package" >&2 || true
    fi
  fi
  if ! command -v "$program" >/dev/null 2>&1; then
    step "note: $program is not installed and could not be (needs root and apt-get); the report leaves it out"
  fi
  # apt-get starts the packaged service; compare.py runs its own instance on a free port.
}

ensure_program redis-server redis-server
ensure_program memcached memcached

step "virtualenv $venv"
if [ ! -x "$venv/bin/python" ]; then
  if ! "$python" -m venv "$venv"; then
    # Debian's python3 ships without ensurepip; its venv module lives in python3-venv.
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
      rm -rf "$venv"
      DEBIAN_FRONTEND=noninteractive apt-get install -y python3-venv >&2 \
        || { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y python3-venv >&2; }
      "$python" -m venv "$venv"
    else
      echo "pybench: '$python -m venv' failed; install python3-venv" >&2
      exit 1
    fi
  fi
fi
venv_python="$venv/bin/python"
"$venv_python" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$venv_python" -m pip install --quiet --disable-pip-version-check "maturin>=1.9.4,<2" lmdb redis pymemcache

step "pip install ./bindings/python (release build into $CARGO_TARGET_DIR)"
nice -n 5 "$venv_python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps \
  "$repository/bindings/python"

cd "$repository"
# compare.py names the wrapper's command in its report beside its own.
export TENURE_PYBENCH_WRAPPER="benches/python/run.sh $mode${*:+ $*}"
if [ "$mode" = "--full" ]; then
  step "compare.py --full --out docs/benchmarks-python.md $*"
  exec "$venv_python" benches/python/compare.py --full --out docs/benchmarks-python.md "$@"
else
  step "compare.py --quick $*"
  exec "$venv_python" benches/python/compare.py --quick "$@"
fi
