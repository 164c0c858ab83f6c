#!/usr/bin/env bash
# tenure's Python module: build it from this checkout and run its checks.
#
#   bash bindings/python/run-tests.sh
#
# 1. a virtualenv with maturin, pytest, hypothesis and mypy from PyPI;
# 2. `pip install ./bindings/python` — the same build a user's pip runs (maturin backend,
#    release profile, crates from crates.io);
# 3. pytest (tests/), `python -m mypy.stubtest tenure`, and `mypy --strict` on the example.
# Exits non-zero on the first failure.
#
# Environment: PYTHON (default python3, 3.9 or newer), TENURE_PYTHON_VENV (default
# target/python-venv), CARGO_TARGET_DIR (default target/python, apart from the workspace's
# debug builds), CARGO_BUILD_JOBS as for cargo.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repository="$(cd "$here/../.." && pwd)"
python="${PYTHON:-python3}"
venv="${TENURE_PYTHON_VENV:-$repository/target/python-venv}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repository/target/python}"

step() { printf '\n=== python: %s\n' "$*"; }

step "virtualenv $venv"
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
venv_python="$venv/bin/python"
"$venv_python" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$venv_python" -m pip install --quiet --disable-pip-version-check \
  "maturin>=1.9.4,<2" "pytest>=7.3" "hypothesis>=6" "mypy>=1.10"

step "pip install ./bindings/python (release build into $CARGO_TARGET_DIR)"
"$venv_python" -m pip install --disable-pip-version-check --force-reinstall --no-deps "$here"

# Everything below imports the installed package, not the source tree.
cd "$here"

step "pytest"
"$venv_python" -m pytest -q -p no:cacheprovider tests

step "stubtest"
"$venv_python" -m mypy.stubtest tenure

step "mypy --strict on the example"
"$venv_python" -m mypy --strict --no-incremental examples/quickstart.py

step "example"
"$venv_python" examples/quickstart.py >/dev/null

echo
echo "python: all checks passed"
