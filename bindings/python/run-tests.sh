#!/usr/bin/env bash
# tenure's Python module: build it from this checkout and run its checks.
#
#   bash bindings/python/run-tests.sh
#
# 1. a virtualenv with maturin, pytest, hypothesis and mypy from PyPI;
# 2. build-dist.sh: the abi3 manylinux wheel and the sdist a release hands out (maturin,
#    release profile, crates from crates.io), installed into that virtualenv;
# 3. the wheel again, into a fresh virtualenv with no Rust toolchain on PATH, and a smoke test
#    there (blocking and asyncio);
# 4. pytest (tests/: also the guide's and the README's Python examples, each run twice in one
#    directory), `python -m mypy.stubtest tenure` (the stubs and tenure.aio), and
#    `mypy --strict` on the examples and on the tenure.aio package;
# 5. the examples.
# Exits non-zero on the first failure.
#
# Environment: PYTHON (default python3, 3.9 or newer), TENURE_PYTHON_VENV (default
# target/python-venv; the clean one is beside it, with "-clean" appended), CARGO_TARGET_DIR
# (default target/python, apart from the workspace's debug builds), CARGO_BUILD_JOBS as for
# cargo.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repository="$(cd "$here/../.." && pwd)"
python="${PYTHON:-python3}"
venv="${TENURE_PYTHON_VENV:-$repository/target/python-venv}"
clean_venv="$venv-clean"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repository/target/python}"
dist="$CARGO_TARGET_DIR/python-dist"

step() { printf '\n=== python: %s\n' "$*"; }

step "virtualenv $venv"
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
venv_python="$venv/bin/python"
"$venv_python" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$venv_python" -m pip install --quiet --disable-pip-version-check \
  "maturin>=1.9.4,<2" "pytest>=7.3" "hypothesis>=6" "mypy>=1.10"

step "build-dist.sh: the abi3 manylinux wheel and the sdist (release build into $CARGO_TARGET_DIR)"
MATURIN="$venv/bin/maturin" bash "$here/build-dist.sh" "$dist"
wheel="$(ls "$dist"/tenure-*.whl)"
"$venv_python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel"

step "the wheel in a fresh virtualenv, no Rust toolchain on PATH"
"$python" -m venv --clear "$clean_venv"
# Only the virtualenv and the system's own directories: no ~/.cargo/bin, no rustup.
clean_path="$clean_venv/bin:/usr/local/bin:/usr/bin:/bin"
env -u CARGO_HOME -u RUSTUP_HOME -u CARGO_TARGET_DIR PATH="$clean_path" \
  "$clean_venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index --no-deps "$wheel"
(cd "$clean_venv" && env -u CARGO_HOME -u RUSTUP_HOME -u CARGO_TARGET_DIR PATH="$clean_path" \
  "$clean_venv/bin/python" "$here/tests/wheel_smoke.py")

# Everything below imports the installed package, not the source tree.
cd "$here"

step "pytest"
"$venv_python" -m pytest -q -p no:cacheprovider tests

step "stubtest"
"$venv_python" -m mypy.stubtest tenure

step "mypy --strict on the examples and tenure.aio"
"$venv_python" -m mypy --strict --no-incremental examples/quickstart.py examples/asyncio_tour.py python/tenure/aio

step "examples"
"$venv_python" examples/quickstart.py >/dev/null
"$venv_python" examples/asyncio_tour.py >/dev/null

echo
echo "python: all checks passed"
