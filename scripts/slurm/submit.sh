#!/bin/bash
# Submits a sweep to Slurm as an N-task job array and its merge as a job that waits for it.
#
#   scripts/slurm/submit.sh SWEEP.toml OUTDIR N [sbatch options for the array...]
#
# e.g. scripts/slurm/submit.sh runs/ewn-3x3x3-init-q.toml /shared/ewn 12 --cpus-per-task=4
# Prints the two job ids. The merged store is OUTDIR/all.db.
set -euo pipefail
if [ $# -lt 3 ]; then
    echo "usage: $0 SWEEP.toml OUTDIR N [sbatch options...]" >&2
    exit 2
fi
SWEEP=$(realpath "$1")
OUT=$(realpath -m "$2")
N=$3
shift 3
HERE=$(dirname "$(realpath "$0")")
mkdir -p "$OUT"
array=$(sbatch --parsable --array=1-"$N" --chdir="$OUT" "$@" "$HERE/sweep.sbatch" "$SWEEP" "$OUT")
array=${array%%;*}
merge=$(sbatch --parsable --dependency=afterok:"$array" --chdir="$OUT" "$HERE/merge.sbatch" "$OUT" "$N")
merge=${merge%%;*}
echo "array job $array (shards 1..$N), merge job $merge -> $OUT/all.db"
