#!/bin/sh
# The Connect Four experiment (docs/network.md, "Experiments"): AlphaZero (runs/c4-az.toml)
# against Go-Exploit search-circular (runs/c4-ge.toml), three seeds each, into one store.
#   runs/c4.sh DB [SEEDS]
# Each spec runs once per seed (its `seed` and `name` lines replaced), niced, on two threads;
# a run already in the store is resumed. Compare `wr_solver_10x` and `auc_solver_10x`:
#   tabula --db DB sql "SELECT r.name, m.iteration, m.value FROM metrics m JOIN runs r
#     ON r.id = m.run_id WHERE m.name = 'wr_solver_10x' ORDER BY r.name, m.iteration"
set -eu
db=$1
seeds=${2:-"1 2 3"}
bin=${TABULA:-./target/release/tabula}
tmp=$(mktemp -d)
for seed in $seeds; do
  for arm in az ge; do
    name=c4-$arm-s$seed
    sed -e "s/^seed = .*/seed = $seed/" -e "s/^name = .*/name = \"$name\"/" \
      "runs/c4-$arm.toml" > "$tmp/$name.toml"
    if "$bin" --db "$db" show "$name" > /dev/null 2>&1; then
      nice -n ${NICE:-10} "$bin" --db "$db" resume "$name" --threads ${THREADS:-2}
    else
      nice -n ${NICE:-10} "$bin" --db "$db" run "$tmp/$name.toml" --threads ${THREADS:-2}
    fi
  done
done
rm -rf "$tmp"
