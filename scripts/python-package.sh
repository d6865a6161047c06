#!/bin/sh
# Builds tabula's Python package (python/, docs/python.md) and installs it into the project's
# venv (target/py-venv, or TABULA_PY_VENV; made by scripts/python-venv.sh), where
# tests/python_package.rs runs its pytest suite. Called by `make python-package` (and so by
# `make test`). The extension is built in Cargo's `test` profile, the one the test suite
# builds the tabula library in, so that on top of `cargo test`'s build only PyO3 and the
# glue compile (a wheel for users: `pip install ./python`, docs/python.md).
# Exits 3 when the venv cannot be had (the test then skips, loudly); any other failure (a
# compile error) is the build's own exit status.
set -eu
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${TABULA_PY_VENV:-$ROOT/target/py-venv}"
TABULA_PY_VENV="$VENV" "$ROOT/scripts/python-venv.sh" || exit 3
"$VENV/bin/python" -c "import maturin" 2>/dev/null || { echo "python-package.sh: no maturin in $VENV" >&2; exit 3; }
VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH" \
    "$VENV/bin/python" -m maturin develop --profile test -m "$ROOT/python/Cargo.toml"
"$VENV/bin/python" -c "import tabula; print('tabula', tabula.__file__)"
