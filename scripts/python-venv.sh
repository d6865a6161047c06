#!/bin/sh
# Creates the Python virtual environment the tests that run Python use (the ONNX export checks,
# tests/onnx_export.rs, docs/python.md's example, tests/experiments.rs, and the Python
# package's tests, python/tests/pytest.rs): ONNX Runtime, the onnx checker, NumPy, pandas,
# pytest, PettingZoo and Gymnasium from PyPI, pinned, in target/py-venv at
# the repository root (TABULA_PY_VENV overrides the place). Called by `make test`; with
# TABULA_PY_TORCH=1 it adds PyTorch (large: the test's PyTorch check is skipped, loudly, when
# torch is missing). Idempotent: an environment whose stamp names these pins is kept.
# Exits non-zero when python3, venv or the package index cannot be had; the test then skips
# loudly.
set -eu
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${TABULA_PY_VENV:-$ROOT/target/py-venv}"
PINS="onnxruntime==1.32.0 onnx==1.23.2 numpy==2.4.6 pandas==3.1.1 pytest==9.2.0 pettingzoo==1.27.0 gymnasium==1.4.0"
if [ "${TABULA_PY_TORCH:-0}" = 1 ]; then
    PINS="$PINS torch==2.15.0"
fi
STAMP="$VENV/tabula-pins"
if [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$PINS" ]; then
    echo "python venv ready: $VENV ($PINS)"
    exit 0
fi
command -v python3 >/dev/null 2>&1 || { echo "python-venv.sh: no python3 on PATH" >&2; exit 1; }
if [ -e "$VENV" ] && [ ! -f "$VENV/pyvenv.cfg" ]; then
    echo "python-venv.sh: $VENV exists and is not a virtual environment: not replacing it" >&2
    exit 1
fi
rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
python3 -m venv "$VENV"
# shellcheck disable=SC2086
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check $PINS
"$VENV/bin/python" -c "import onnxruntime, numpy, pandas; print('onnxruntime', onnxruntime.__version__, 'numpy', numpy.__version__, 'pandas', pandas.__version__)"
echo "$PINS" > "$STAMP"
echo "python venv ready: $VENV ($PINS)"
