#!/bin/sh
# GNU Go level 1 against checkpoints of the 9x9 runs of runs/go-exploit.sh (docs/go.md): for
# each arm and seed, iterations 0, 5, 10, 15 and 20 play 8 games (half as black) searching 50
# simulations a move; one JSON per match (`tabula match --json`, with GNU Go's final_score
# beside tabula's) into OUT.
#   runs/go9-gnugo.sh DB OUT [SEEDS]
set -eu
db=$1
out=$2
bin=${TABULA:-./target/release/tabula}
gnugo=${GNUGO:-gnugo}
mkdir -p "$out"
for s in ${3:-"1 2 3"}; do for arm in ${ARMS:-az ge}; do for i in ${AT:-0 5 10 15 20}; do
  f="$out/go9-$arm-s$s@$i.json"
  [ -s "$f" ] && continue
  nice -n "${NICE:-5}" "$bin" --db "$db" match go:9x9 --a "model:go9-$arm-s$s@$i,sims=50" \
    --b "gtp:$gnugo --mode gtp --level 1 --chinese-rules --capture-all-dead --seed $s" \
    --games 8 --seed "$s" --threads "${THREADS:-1}" --json > "$f.tmp"
  mv "$f.tmp" "$f"
done; done; done
