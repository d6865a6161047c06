#!/bin/sh
# The MuZero study's figures (docs/muzero.md, "The study"), from the store the sweeps ran
# into: sh runs/muzero-study/figures.sh STORE [OUT_DIR, default docs/muzero]
set -e
db=${1:?give the store}; out=${2:-docs/muzero}; t=${TABULA:-target/release/tabula}
mkdir -p "$out"
depth=mae_v_depth_0,mae_v_depth_1,mae_v_depth_2,mae_v_depth_3,mae_v_depth_4,mae_v_depth_5
for g in ewn cdc; do
  arms="--with $g-muzero-seeds --with $g-smz-seeds --with $g-smz-paper-seeds"
  for m in wr_p err_p mae_v; do
    $t plot $g-az-seeds --db "$db" $arms --metric $m --out "$out/$g-$m.svg"
  done
  $t plot $g-muzero-seeds --db "$db" --with $g-smz-seeds --with $g-smz-paper-seeds \
    --metrics $depth --out "$out/$g-depth.svg"
  $t plot $g-muzero-seeds --db "$db" --with $g-smz-seeds --with $g-smz-paper-seeds \
    --metrics mae_root_model,mae_root_rules --out "$out/$g-root.svg"
  $t plot $g-smz-seeds --db "$db" --with $g-smz-paper-seeds --metric code_usage \
    --out "$out/$g-code_usage.svg"
done
# Three times the self-play on EWN (the *-long-seeds sweeps).
$t plot ewn-az-long-seeds --db "$db" --with ewn-muzero-long-seeds --with ewn-smz-long-seeds \
  --metric wr_p --out "$out/ewn-long-wr_p.svg"
$t plot ewn-muzero-long-seeds --db "$db" --with ewn-smz-long-seeds \
  --metrics mae_root_model,mae_root_rules --out "$out/ewn-long-root.svg"
