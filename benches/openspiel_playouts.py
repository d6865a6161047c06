#!/usr/bin/env python3
"""Side-by-side random playouts per second: tabula's Go against OpenSpiel's C++ `go`.

One playout is one complete game from the empty board, every move drawn uniformly from the
legal actions (pass included), on one core each (pinned with `taskset -c CORE` when
available), the two engines alternating in rounds within this run:

  - tabula: `tabula::play::random_playout` (`examples/playout_speed.rs`);
  - OpenSpiel: `pyspiel.evaluate_bots(game.new_initial_state(), bots, seed)` with two
    `pyspiel.make_uniform_random_bot` players: the whole game loop runs in C++
    (`EvaluateBots`: `LegalActions`, a uniform draw, `ApplyAction` per move), one Python call
    per game.

Both play OpenSpiel's rules (komi 7.5, games end after two passes, on a repeated board or at
2*N*N moves), so the games have the same length distribution (about 120 moves on 9x9).

Usage (from the repository root; CI does not run it):

    python3 benches/openspiel_playouts.py [--variants 9] [--rounds 3] [--seconds 3] [--core 1]
                                          [--venv .venv-openspiel] [--profile release] [--json]
                                          [--binary PATH]

`--variants` takes board sides (e.g. `5,7,9`). The first run creates the virtual environment and
installs OpenSpiel there (`pip install -r tests/openspiel/requirements.txt`: open_spiel 2.0.2
wheels exist for CPython 3.11 on x86-64 Linux). It builds tabula's example with
`cargo build --profile PROFILE --example playout_speed` (`--profile test` reuses the test
build: opt-level 2 instead of release's 3).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from openspiel_common import ROOT, ensure_venv, pinned, run_json

OPENSPIEL_BENCH = r"""
import json, sys, time
import pyspiel
n, seconds = int(sys.argv[1]), float(sys.argv[2])
game = pyspiel.load_game("go", {"board_size": n, "komi": 7.5})
bots = [pyspiel.make_uniform_random_bot(0, 1), pyspiel.make_uniform_random_bot(1, 2)]
for i in range(10):  # warm-up
    pyspiel.evaluate_bots(game.new_initial_state(), bots, i)
games, moves, t = 0, 0, time.perf_counter()
while time.perf_counter() - t < seconds:
    for _ in range(20):
        state = game.new_initial_state()
        pyspiel.evaluate_bots(state, bots, games)
        moves += len(state.history())
        games += 1
secs = time.perf_counter() - t
print(json.dumps({"engine": "openspiel", "variant": f"go board_size={n} komi=7.5",
                  "playouts": games, "moves": moves, "seconds": secs,
                  "playouts_per_second": games / secs, "moves_per_second": moves / secs}))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", default="9", help="board sides, comma-separated (5..9)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--core", type=int, default=1)
    ap.add_argument("--venv", default=os.path.join(ROOT, ".venv-openspiel"))
    ap.add_argument("--python", default="python3")
    ap.add_argument("--profile", default="release")
    ap.add_argument("--binary", help="a built playout_speed example (skips the cargo build)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    sides = [int(x) for x in args.variants.split(",")]

    py = ensure_venv(args.venv, args.python)
    if args.binary:
        tabula = args.binary
    else:
        subprocess.run(["cargo", "build", "--profile", args.profile, "--quiet", "--example",
                        "playout_speed"], cwd=ROOT, check=True)
        target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
        out_dir = "debug" if args.profile in ("dev", "test") else args.profile
        tabula = os.path.join(target, out_dir, "examples", "playout_speed")

    rows = []
    for n in sides:
        ours, theirs = [], []
        for _ in range(args.rounds):
            ours.append(run_json(pinned([tabula, f"go:{n}x{n}", str(args.seconds)], args.core)))
            theirs.append(run_json(pinned([py, "-c", OPENSPIEL_BENCH, str(n), str(args.seconds)],
                                          args.core)))
        a = statistics.median(r["playouts_per_second"] for r in ours)
        b = statistics.median(r["playouts_per_second"] for r in theirs)
        rows.append({"variant": f"go:{n}x{n}", "tabula": ours, "openspiel": theirs,
                     "tabula_median": a, "openspiel_median": b, "ratio": a / b})
    load = os.getloadavg()
    if args.json:
        print(json.dumps({"rows": rows, "loadavg": load, "profile": args.profile,
                          "core": args.core}, indent=2))
        return
    print(f"random playouts per second (median of {args.rounds} rounds of {args.seconds:g} s, "
          f"alternating), core {args.core}, tabula profile {args.profile}, "
          f"{time.strftime('%Y-%m-%d %H:%M')}, load average {load[0]:.2f} {load[1]:.2f}")
    print(f"{'variant':<10}{'tabula':>12}{'OpenSpiel':>12}{'ratio':>8}"
          f"{'moves/playout':>15}")
    for r in rows:
        mpp = sum(x["moves"] for x in r["tabula"]) / sum(x["playouts"] for x in r["tabula"])
        mpp_os = (sum(x["moves"] for x in r["openspiel"])
                  / sum(x["playouts"] for x in r["openspiel"]))
        print(f"{r['variant']:<10}{r['tabula_median']:>12,.0f}{r['openspiel_median']:>12,.0f}"
              f"{r['ratio']:>7.1f}x{mpp:>8.1f} /{mpp_os:>5.1f}")


if __name__ == "__main__":
    sys.exit(main())
