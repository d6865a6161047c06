#!/usr/bin/env python3
"""Side-by-side search speed: tabula's MCTS against OpenSpiel's C++ MCTSBot.

Both run one random rollout per leaf at the same simulation count per search, on one core
each (pinned with `taskset -c CORE` when available), one after the other in this run:

  - tabula: PUCT MCTS with the `Rollout(1)` evaluator (`examples/search_speed.rs`);
  - OpenSpiel: `pyspiel.MCTSBot(game, pyspiel.RandomRolloutEvaluator(1, seed), uct_c=2, ...)`,
    timed over repeated `bot.step(state)` calls.

Positions: Connect Four 7x6 from the empty board (`c4:7x6` / `connect_four`), and EWN 5x5x6
after the placements (`ewn:5x5x6` / `einstein_wurfelt_nicht`, chance resolved until the first
decision; both games' start triangles and die rolls are chance events).

Usage (from the repository root; CI does not run it):

    python3 benches/openspiel_compare.py [--sims 1000] [--seconds 5] [--core 0]
                                         [--venv .venv-openspiel] [--json]

The first run creates the virtual environment and installs OpenSpiel there
(`pip install -r tests/openspiel/requirements.txt`: open_spiel 2.0.2 wheels exist for CPython
3.11 on x86-64 Linux). Set `--python` to a CPython 3.11 interpreter if `python3` is another
version. It builds tabula's example with `cargo build --release --example search_speed`.
"""

import argparse
import json
import os
import subprocess
import sys
import time

from openspiel_common import ROOT, ensure_venv, pinned, run_json

CASES = [
    # (tabula variant, OpenSpiel game)
    ("c4:7x6", "connect_four"),
    ("ewn:5x5x6", "einstein_wurfelt_nicht"),
]

OPENSPIEL_BENCH = r"""
import json, sys, time
import numpy as np
import pyspiel
game_name, sims, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
game = pyspiel.load_game(game_name)
rng = np.random.RandomState(0)
state = game.new_initial_state()
while state.is_chance_node():
    outcomes, probs = zip(*state.chance_outcomes())
    state.apply_action(int(rng.choice(outcomes, p=probs)))
bot = pyspiel.MCTSBot(game, pyspiel.RandomRolloutEvaluator(1, 0), 2.0, sims,
                      1 << 30, False, 0, False)
bot.step(state)  # warm-up
done, t, cpu = 0, time.perf_counter(), time.thread_time()
while time.perf_counter() - t < seconds:
    bot.step(state)
    done += sims
secs = time.perf_counter() - t
cpu = time.thread_time() - cpu
print(json.dumps({"engine": "openspiel", "search": "MCTSBot+RandomRolloutEvaluator(1)",
                  "variant": game_name, "simulations_per_search": sims, "simulations": done,
                  "seconds": secs, "sims_per_second": done / secs,
                  "cpu_seconds": cpu, "sims_per_cpu_second": done / cpu}))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sims", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--core", type=int, default=0)
    ap.add_argument("--venv", default=os.path.join(ROOT, ".venv-openspiel"))
    ap.add_argument("--python", default="python3")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    py = ensure_venv(args.venv, args.python)
    subprocess.run(["cargo", "build", "--release", "--quiet", "--example", "search_speed"],
                   cwd=ROOT, check=True)
    tabula = os.path.join(ROOT, "target", "release", "examples", "search_speed")

    load = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else "?"
    rows = []
    for variant, os_game in CASES:
        ours = run_json(pinned([tabula, variant, str(args.sims), str(args.seconds)], args.core))
        theirs = run_json(pinned([py, "-c", OPENSPIEL_BENCH, os_game, str(args.sims),
                                  str(args.seconds)], args.core))
        rows.append({"tabula": ours, "openspiel": theirs,
                     "speedup": ours["sims_per_second"] / theirs["sims_per_second"],
                     "cpu_speedup": ours["sims_per_cpu_second"]
                     / theirs["sims_per_cpu_second"]})
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{args.sims} simulations per search, one random rollout per leaf, "
          f"core {args.core}, {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"load before: {load}")
    print(f"{'position':<36}{'tabula sims/s':>15}{'OpenSpiel sims/s':>18}{'ratio':>7}"
          f"{'ratio by CPU time':>19}")
    for (variant, os_game), r in zip(CASES, rows):
        print(f"{variant + ' / ' + os_game:<36}{r['tabula']['sims_per_second']:>15,.0f}"
              f"{r['openspiel']['sims_per_second']:>18,.0f}{r['speedup']:>6.1f}x"
              f"{r['cpu_speedup']:>18.1f}x")
    print("sims/s: over the wall clock; ratio by CPU time: simulations per second of the "
          "measuring thread's CPU time (what other work on the machine does not stretch)")


if __name__ == "__main__":
    sys.exit(main())
