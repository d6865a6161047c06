#!/bin/bash
# `make slurm-check`: a real Slurm run of a small sweep, and of one run spread over 4 tasks, on
# a single-node cluster on this host.
#
# 1. installs Debian's slurm-wlm and munge (apt-get update first; needs root);
# 2. starts munged (a fresh key if none) and a cluster of one node on localhost: slurmctld
#    and slurmd with a minimal slurm.conf whose node line is `slurmd -C`'s (the machine's
#    real CPUs and memory), all state under a temporary directory;
# 3. submits a 2-value x 2-seed sweep as a 4-task job array (scripts/slurm/submit.sh) and
#    the merge as a dependent job, waits for both;
# 4. runs the same sweep unsharded in one process and checks that every run's head in the
#    merged store equals the unsharded one;
# 5. runs one network run as a job of 2, 3 and 4 tasks (scripts/slurm/run.sbatch: a trainer
#    and 1-3 self-play workers) and checks each head against the same spec run in one
#    process, printing them; stops the daemons.
# Exits non-zero on any failure. Prints the time taken.
set -euo pipefail
START=$(date +%s)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TABULA=${TABULA:-$ROOT/target/release/tabula}
if [ ! -x "$TABULA" ]; then
    echo "no tabula binary at $TABULA (run \`make build\` or set TABULA)" >&2
    exit 1
fi
export TABULA
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

echo "== installing slurm-wlm and munge"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >/dev/null
$SUDO apt-get install -y -q --no-install-recommends slurm-wlm munge >/dev/null

WORK=$(mktemp -d /tmp/tabula-slurm-check.XXXXXX)
chmod 755 "$WORK"
STATE=$WORK/state
mkdir -p "$STATE/ctld" "$STATE/d"
export SLURM_CONF=$STATE/slurm.conf
KEEP=1
cleanup() {
    # Only the daemons this script started, by their pids.
    for f in "$STATE/slurmd.pid" "$STATE/slurmctld.pid"; do
        if [ -f "$f" ]; then $SUDO kill "$(cat "$f")" 2>/dev/null || true; fi
    done
    if [ -n "${MUNGE_PID:-}" ]; then $SUDO kill "$MUNGE_PID" 2>/dev/null || true; fi
    sleep 1
    if [ "$KEEP" = 0 ]; then rm -rf "$WORK"; else echo "(state and logs kept in $WORK)"; fi
}
trap cleanup EXIT

echo "== munge"
if [ ! -s /etc/munge/munge.key ]; then
    $SUDO mkdir -p /etc/munge
    $SUDO dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
$SUDO chown munge:munge /etc/munge/munge.key
$SUDO chmod 400 /etc/munge/munge.key
$SUDO mkdir -p /run/munge /var/log/munge /var/lib/munge
$SUDO chown munge:munge /run/munge /var/log/munge /var/lib/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    $SUDO runuser -u munge -- /usr/sbin/munged
    sleep 1
    MUNGE_PID=$(cat /run/munge/munged.pid 2>/dev/null || true)
fi
munge -n | unmunge >/dev/null

echo "== slurm.conf"
HOST=$(hostname -s)
NODE=$(slurmd -C | head -1)   # NodeName=... CPUs=... RealMemory=... (the real machine)
NODE=$(echo "$NODE" | sed -E "s/^NodeName=[^ ]+/NodeName=$HOST NodeAddr=127.0.0.1/")
cat > "$SLURM_CONF" <<CONF
ClusterName=tabulacheck
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
$NODE State=UNKNOWN
PartitionName=check Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF
cat "$SLURM_CONF" | grep -E "^NodeName|^Partition"

echo "== starting slurmctld and slurmd"
$SUDO env SLURM_CONF="$SLURM_CONF" slurmctld -i
$SUDO env SLURM_CONF="$SLURM_CONF" slurmd
for _ in $(seq 1 60); do
    if sinfo -h -o "%T" 2>/dev/null | grep -qE "^idle"; then break; fi
    sleep 1
done
sinfo
sinfo -h -o "%T" | grep -qE "^idle" || { echo "the node did not come up" >&2; tail -20 "$STATE"/*.log >&2; exit 1; }

echo "== a small sweep as a job array"
cat > "$WORK/base.toml" <<'SPEC'
variant = "ewn:3x3x3"
seed = 1
iterations = 4
games_per_iteration = 100
checkpoint_every = 2
[search]
simulations = 12
[eval]
games = 500
SPEC
cat > "$WORK/sweep.toml" <<'SPEC'
name = "slurm-check"
base = "base.toml"
seeds = [1, 2]
[axes]
"search.init_q" = ["loss", "draw"]
SPEC
OUT=$WORK/out
"$ROOT/scripts/slurm/submit.sh" "$WORK/sweep.toml" "$OUT" 4 --cpus-per-task=1
for _ in $(seq 1 600); do
    if [ -f "$OUT/merged.ok" ]; then break; fi
    if [ -z "$(squeue -h 2>/dev/null)" ] && [ ! -f "$OUT/merged.ok" ]; then
        sleep 2
        [ -f "$OUT/merged.ok" ] && break
        echo "the jobs ended without a merged store" >&2
        cat "$OUT"/*.out >&2 || true
        exit 1
    fi
    sleep 1
done
[ -f "$OUT/merged.ok" ] || { echo "timed out waiting for the jobs" >&2; exit 1; }
cat "$OUT"/tabula-merge-*.out

echo "== the same sweep unsharded, compared"
"$TABULA" --db "$WORK/whole.db" sweep "$WORK/sweep.toml" --json >/dev/null
Q="SELECT name, head FROM sweep_runs ORDER BY name"
"$TABULA" --db "$WORK/whole.db" sql --csv "$Q" > "$WORK/whole.csv"
"$TABULA" --db "$OUT/all.db" sql --csv "$Q" > "$WORK/merged.csv"
if ! diff "$WORK/whole.csv" "$WORK/merged.csv"; then
    echo "FAIL: the merged heads differ from the unsharded sweep's" >&2
    exit 1
fi
runs=$(($(wc -l < "$WORK/merged.csv") - 1))
[ "$runs" = 4 ] || { echo "FAIL: $runs runs merged, expected 4" >&2; exit 1; }
"$TABULA" --db "$OUT/all.db" fsck >/dev/null
echo "PASS: $runs runs through sbatch --array, merged; every head equals the unsharded sweep's ($(( $(date +%s) - START )) s)"

echo "== one run across 2, 3 and 4 Slurm tasks (a trainer and 1-3 workers), compared"
cat > "$WORK/spread.toml" <<'SPEC'
name = "slurm-spread"
variant = "ewn:3x3x3"
seed = 1
iterations = 3
games_per_iteration = 120
window = 2
[search]
simulations = 24
[eval]
games = 500
[learner]
kind = "network"
[learner.network]
arch = "mlp"
hidden = [32]
optimizer = "sgd"
lr = [[1, 0.1]]
replay_games = 200
batch_size = 64
train_steps = 10
SPEC
"$TABULA" --db "$WORK/one.db" run "$WORK/spread.toml" --json > "$WORK/one.json"
Q="SELECT head FROM runs WHERE name = 'slurm-spread'"
ONE=$("$TABULA" --db "$WORK/one.db" sql --csv "$Q" | tail -1)
echo "head in one process:                  $ONE"
for W in 1 2 3; do
    ROUT=$WORK/run-$W
    # W+1 tasks on a node of fewer CPUs: --overcommit lets them share (one thread each).
    JOB=$(sbatch --parsable --ntasks=$((W + 1)) --overcommit --output="$WORK/run-$W.out" \
        "$ROOT/scripts/slurm/run.sbatch" "$WORK/spread.toml" "$ROUT" --slice 5 --lease 5 --json)
    for _ in $(seq 1 600); do
        if [ -z "$(squeue -h -j "$JOB" 2>/dev/null)" ]; then break; fi
        sleep 1
    done
    SPREAD=$("$TABULA" --db "$ROUT/run.db" sql --csv "$Q" | tail -1)
    ENDED=$(grep -c '"stopped":"finished"' "$WORK/run-$W.out" || true)
    PLAYED=$(grep -o '"games":[0-9]*' "$WORK/run-$W.out" | awk -F: '{s += $2} END {print s + 0}')
    echo "head with a trainer and $W Slurm workers: $SPREAD ($ENDED workers ended with the run; they played ${PLAYED:-0} of 360 games)"
    [ "${PLAYED:-0}" -gt 0 ] || { echo "FAIL: the workers played no game" >&2; exit 1; }
    [ -n "$ONE" ] && [ "$SPREAD" = "$ONE" ] || {
        echo "FAIL: the heads differ" >&2; cat "$WORK/run-$W.out" >&2; exit 1; }
    [ "$ENDED" = "$W" ] || {
        echo "FAIL: $ENDED of $W workers ended with the run" >&2; cat "$WORK/run-$W.out" >&2; exit 1; }
    "$TABULA" --db "$ROUT/run.db" fsck >/dev/null
done
echo "PASS: one run on 1, 2 and 3 Slurm workers beside its trainer has the one-process head ($(( $(date +%s) - START )) s in all)"
KEEP=0
