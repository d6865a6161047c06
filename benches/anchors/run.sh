#!/usr/bin/env bash
# tabula's network engine against ONNX Runtime (inference) and PyTorch (training), issue 23:
# the same nets, one thread each, pinned to one core, rounds alternating tabula, ONNX Runtime,
# PyTorch; prints the table of medians with the ratios (docs/network.md, "Measuring against
# ONNX Runtime and PyTorch"). CI does not run it.
#
#   benches/anchors/run.sh [--rounds 5] [--seconds 2] [--core 1] [--nets "NAME ..."] [--json]
#
# The first run creates a virtual environment (target/anchors-venv, or $ANCHORS_VENV) and
# installs the pinned anchors there: numpy, onnx, onnxruntime, and torch (the CPU wheel from
# download.pytorch.org when reachable, else PyPI's, which pulls several GB of CUDA packages).
# Without torch the ONNX Runtime columns are still measured (the ONNX graphs are built with
# onnx.helper, not exported by torch) and the PyTorch column reads n/a.
set -euo pipefail

ROUNDS=5
SECONDS_EACH=2
CORE=1
NETS="c4-mlp64x64 c4-res2x16 c4-res6x64 cc7-res9x32 cc7-res9x64 liu"
JSON=""
COMMAND="$0 $*"
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS="${2:?--rounds needs a value}"; shift 2 ;;
        --seconds) SECONDS_EACH="${2:?--seconds needs a value}"; shift 2 ;;
        --core) CORE="${2:?--core needs a value}"; shift 2 ;;
        --nets) NETS="${2:?--nets needs a value}"; shift 2 ;;
        --json) JSON="--json"; shift ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) echo "unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
case "$ROUNDS" in ''|*[!0-9]*|0) echo "--rounds: expected a positive integer, got '$ROUNDS'" >&2; exit 2 ;; esac

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
HERE="$ROOT/benches/anchors"
VENV="${ANCHORS_VENV:-$ROOT/target/anchors-venv}"
PY="$VENV/bin/python"
OUT_DIR="$ROOT/target/anchors"
mkdir -p "$OUT_DIR"
STAMP="$(date -u +%Y%m%dT%H%M%SZ)"
RESULTS="$OUT_DIR/results-$STAMP.jsonl"
MACHINE="$OUT_DIR/machine-$STAMP.json"
log() { echo "[anchors] $*" >&2; }

# Pinned versions (the ones of the issue's table).
NUMPY=2.4.6
ONNX=1.23.2
ORT=1.32.0
TORCH=2.15.0

# --- the virtual environment -----------------------------------------------------------------
if [ ! -x "$PY" ]; then
    log "creating $VENV"
    python3 -m venv "$VENV"
    "$PY" -m pip install -q --upgrade pip >&2
fi
if ! "$PY" -c "import numpy, onnx, onnxruntime as o; assert o.__version__ == '$ORT'" 2>/dev/null; then
    log "installing numpy $NUMPY, onnx $ONNX, onnxruntime $ORT"
    "$PY" -m pip install -q "numpy==$NUMPY" "onnx==$ONNX" "onnxruntime==$ORT" >&2
fi
HAVE_TORCH=1
if ! "$PY" -c "import torch" 2>/dev/null; then
    HAVE_TORCH=0
    FREE_GB=$(df -Pk "$VENV" | awk 'NR == 2 { print int($4 / 1048576) }')
    log "free disk where the venv lives: ${FREE_GB} GB"
    if [ "${FREE_GB:-0}" -lt 10 ]; then
        log "less than 10 GB free: not installing torch"
    else
        log "installing torch $TORCH (CPU wheel first)"
        if timeout 900 "$PY" -m pip install -q "torch==$TORCH" \
            --index-url https://download.pytorch.org/whl/cpu >&2 2>/dev/null ||
            timeout 1800 "$PY" -m pip install -q "torch==$TORCH" >&2; then
            "$PY" -c "import torch" 2>/dev/null && HAVE_TORCH=1
        fi
    fi
    [ "$HAVE_TORCH" = 1 ] || log "torch could not be installed: the PyTorch column will read n/a"
fi
if [ "$HAVE_TORCH" = 1 ]; then
    "$PY" "$HERE/anchors.py" check >&2
fi

# --- tabula's example ----------------------------------------------------------------------------
log "building examples/nn_throughput.rs"
(cd "$ROOT" && cargo build -q --release --example nn_throughput) >&2
TABULA="${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/nn_throughput"
[ -x "$TABULA" ] || { echo "cannot find $TABULA" >&2; exit 1; }

PIN=()
if command -v taskset >/dev/null; then
    PIN=(taskset -c "$CORE")
else
    log "taskset not found: running unpinned"
fi

# --- the machine ---------------------------------------------------------------------------------
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
PINNED="no (taskset missing)"
[ ${#PIN[@]} -gt 0 ] && PINNED="core $CORE"
"$PY" "$HERE/anchors.py" machine | (cd "$ROOT" && M_PINNED="$PINNED" M_LOAD="$LOAD_START" \
    M_COMMAND="$COMMAND" M_OUT="$MACHINE" "$PY" -c '
import json, os, subprocess, sys
m = json.load(sys.stdin)
def out(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"
m["rustc"] = out("rustc", "--version")
dirty = out("git", "status", "--porcelain", "--untracked-files=no")
m["tabula commit"] = out("git", "rev-parse", "--short", "HEAD") + (" (dirty)" if dirty else "")
m["pinned"] = os.environ["M_PINNED"]
m["load average at start (1, 5, 15 min)"] = os.environ["M_LOAD"]
m["command"] = os.environ["M_COMMAND"]
json.dump(m, open(os.environ["M_OUT"], "w"))
')

# --- alternating rounds --------------------------------------------------------------------------
run() { # label, command...
    local label="$1"; shift
    if ! "${PIN[@]}" "$@" >>"$RESULTS"; then
        log "$label failed (see above); continuing"
    fi
}
for r in $(seq 1 "$ROUNDS"); do
    for net in $NETS; do
        log "round $r/$ROUNDS: $net"
        run "tabula $net" "$TABULA" --net "$net" --seconds "$SECONDS_EACH"
        run "onnxruntime $net" "$PY" "$HERE/anchors.py" measure --net "$net" --engine ort \
            --seconds "$SECONDS_EACH"
        if [ "$HAVE_TORCH" = 1 ]; then
            run "pytorch $net" "$PY" "$HERE/anchors.py" measure --net "$net" --engine torch \
                --seconds "$SECONDS_EACH"
        fi
    done
done
LOAD_END="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
M_LOAD="$LOAD_END" M_OUT="$MACHINE" "$PY" -c '
import json, os
m = json.load(open(os.environ["M_OUT"]))
m["load average at end (1, 5, 15 min)"] = os.environ["M_LOAD"]
json.dump(m, open(os.environ["M_OUT"], "w"))
'
log "results: $RESULTS"
"$PY" "$HERE/anchors.py" report "$RESULTS" --machine "$MACHINE" $JSON
