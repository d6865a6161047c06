#!/usr/bin/env bash
# Build cost (issue 44; docs/architecture.md, "Crates"): a clean `cargo build --release
# --all-targets` in a fresh target folder, then the rebuild after touching one game file.
# Prints wall and CPU seconds with the load average; compare CPU seconds when the machine is
# not quiet.
# usage: scripts/measure-build.sh [CHECKOUT] [GAME_FILE]   (defaults: . and the Connect Four rules)
set -u
cd "${1:-.}"
game=${2:-src/games/connect4/mod.rs}
export CARGO_TARGET_DIR=$PWD/target-measure
rm -rf "$CARGO_TARGET_DIR"
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "clean release build at $(git rev-parse --short HEAD), load $(load)"
/usr/bin/time -f "clean: wall %e s, user %U s, sys %S s" cargo build --release --all-targets -q
touch "$game"
echo "load $(load)"
/usr/bin/time -f "touch $game: wall %e s, user %U s, sys %S s" cargo build --release --all-targets -q
echo "load $(load)"
