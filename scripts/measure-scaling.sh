#!/usr/bin/env bash
# Per-phase speed-up from 1 to 2 threads (issue 45; docs/scaling.md): three shortened runs,
# each at --threads 1 and --threads 2, one after another, with TABULA_PHASE_SECONDS set so
# the phases inside training and evaluation print their wall time (src/eval/phases.rs). The
# stores go to OUT; the heads of the two thread counts must match. Then
# scripts/scaling_summary.py OUT prints the table.
#   - ewn: runs/ewn-3x3x3.toml, EWN_ITER (10) iterations (1,000 games at 800 simulations, WR_p over
#     10,000 games, ERR_p);
#   - c4: the Gumbel grid's Connect Four arm (runs/gumbel/c4-gumbel.toml: c4-az.toml with
#     Gumbel at 16 simulations, 300 games, the six test sets and the search player's moves),
#     2 iterations;
#   - c7: runs/checkers-7x7/pipeline.toml shortened: stage 1 one epoch of C7_S1 (200) greedy games,
#     stage 2 C7_ITER (2) episodes of C7_GAMES (12) games at 175 simulations, gating on C7_EVAL (8)
#     games, C7_EVAL games against the greedy player.
# usage: scripts/measure-scaling.sh [BIN] [OUT] [SPECS...]   (defaults: target/release/tabula,
# /tmp/tabula-scaling, "ewn c4 c7"); THREADS="1 2" the thread counts, one run after another.
set -eu
bin=$(realpath "${1:-target/release/tabula}")
out=${2:-/tmp/tabula-scaling}
shift $(( $# > 2 ? 2 : $# )) || true
specs=${*:-ewn c4 c7}
mkdir -p "$out"
load() { cut -d' ' -f1-3 /proc/loadavg; }
sed -e "s/^games_per_iteration = 1000/games_per_iteration = ${C7_S1:-200}/" \
    -e "s/^greedy_games = 20/greedy_games = ${C7_EVAL:-8}/" \
    -e 's/^iterations = 10$/iterations = 1/' \
    -e "s/^iterations = 6\$/iterations = ${C7_ITER:-2}/" \
    -e "s/\"games_per_iteration\" = 30/\"games_per_iteration\" = ${C7_GAMES:-12}/" \
    -e "s/\"learner.network.gate.games\" = 24/\"learner.network.gate.games\" = ${C7_EVAL:-8}/" \
    runs/checkers-7x7/pipeline.toml > "$out/c7-short.toml"
args() {
  case $1 in
    ewn) echo "runs/ewn-3x3x3.toml --set iterations=${EWN_ITER:-10}" ;;
    c4) echo "runs/c4-az.toml --set iterations=2 --set games_per_iteration=300
      --set learner.network.replay_games=1200 --set learner.network.reference.solver_games=0
      --set learner.network.reference.c4_sets=[\"L3_R1\",\"L2_R1\",\"L2_R2\",\"L1_R1\",\"L1_R2\",\"L1_R3\"]
      --set learner.network.reference.c4_search=true --set search.algorithm=gumbel
      --set search.simulations=16" ;;
    c7) echo "$out/c7-short.toml" ;;
  esac
}
for spec in $specs; do
  for threads in ${THREADS:-1 2}; do
    db=$out/$spec-$threads.db
    rm -f "$db" "$db"-*
    echo "$spec --threads $threads: load before $(load)" | tee "$out/$spec-$threads.load"
    # shellcheck disable=SC2046
    TABULA_PHASE_SECONDS=1 "$bin" --db "$db" run $(args "$spec") --threads "$threads" \
      2> "$out/$spec-$threads.phases" > "$out/$spec-$threads.out"
    echo "$spec --threads $threads: load after $(load)" | tee -a "$out/$spec-$threads.load"
    "$bin" --db "$db" sql --csv "select iteration, self_play_seconds, training_seconds,
      evaluation_seconds, store_seconds, hash from iterations order by run_id, iteration" \
      > "$out/$spec-$threads.csv"
  done
done
