#!/usr/bin/env python3
"""The papers' pipelines on 1, 4 and 16 nodes of 32 cores (docs/scaling.md, "Projection").

Each phase: its work in one-core seconds per iteration (docs/checkers.md's measured table for
Liu et al.; docs/go.md's FLOP count for the Go-Exploit 9x9 arm; AlphaZero.jl's Connect Four
from tabula's measured per-core rates of docs/network.md scaled by FLOP), its units of
parallel work per iteration (games, or 16-sample chunks of a minibatch), and where it runs:
self-play on every node's cores, everything else on the trainer's one node. A phase's wall
time per iteration on c cores: serial * W + ceil(units / c) * (1 - serial) * W / units (the
units run in rounds of c; one unit's time is the floor). `serial`: 0 for the phases of whole
games (their only serial work, taking the games in and adding scores, is milliseconds an
iteration in the measured runs), and an assumed 0.1 for training (the per-step serial work
around the chunks: not resolved by the measurements on the shared 2-core machine; see
docs/scaling.md).

usage: scripts/scaling_projection.py
"""
import math

CORES = 32
NODES = [1, 4, 16]

# (pipeline, phase, iterations, one-core seconds an iteration, units an iteration,
#  on all nodes?, serial fraction)
LIU = "Liu et al. 7x7-6"
GO = "Go-Exploit 9x9 arm"
AZJL = "AlphaZero.jl Connect Four"
# AlphaZero.jl's net (5 residual blocks of 128 filters) against the measured 6 x 64 Connect
# Four ResNet (2,366 positions/s at batch 64, 620 training samples/s, one core):
# blocks x channels^2 = 81,920 / 24,576 = 3.33x the FLOP.
AZ_INFER = 2366 / 3.33
AZ_TRAIN = 620 / 3.33
AZ_PLIES = 30  # assumed mean length of a self-play game
PHASES = [
    (LIU, "stage 1 self-play (greedy)", 100, 2, 15000, True, 0.0),
    (LIU, "stage 1 training (batch 32)", 100, 100, 2, False, 0.1),
    (LIU, "stage 2 self-play", 100, 620, 180, True, 0.0),
    (LIU, "stage 2 training (batch 32)", 100, 200 + 3400 / 100, 2, False, 0.1),
    (LIU, "gating (24 games)", 100, 71, 24, False, 0.0),
    (LIU, "score against greedy (300 games)", 201, 480, 300, False, 0.0),
    (GO, "self-play (4,096 states a step, ~46 games)", 900, 10000 * 3600 / 900, 46, True, 0.0),
    (GO, "training (batch 512)", 900, 80 * 3600 / 900, 32, False, 0.1),
    (AZJL, "self-play (5,000 games, 600 simulations)", 15, 5000 * AZ_PLIES * 600 / AZ_INFER, 5000, True, 0.0),
    (AZJL, "training (~700,000 samples, batch 1024)", 15, 700000 / AZ_TRAIN, 64, False, 0.1),
    (AZJL, "gating (128 games)", 15, 128 * AZ_PLIES * 600 / AZ_INFER, 128, False, 0.0),
    (AZJL, "benchmark (256 games, AlphaZero player)", 15, 256 * AZ_PLIES / 2 * 600 / AZ_INFER, 256, False, 0.0),
]


def wall(w, units, cores, serial):
    return serial * w + math.ceil(units / cores) * (1 - serial) * w / units


def hours(s):
    return f"{s / 3600:.1f} h" if s >= 360 else f"{s / 60:.1f} min"


def main():
    print("| pipeline | phase | one core | " + " | ".join(f"{n} node{'s' if n > 1 else ''}" for n in NODES) + " |")
    print("|---|---|---:|" + "---:|" * len(NODES))
    totals = {}
    for pipe, phase, iters, w, units, spread, serial in PHASES:
        cells = []
        for n in NODES:
            c = CORES * n if spread else CORES
            t = iters * wall(w, units, c, serial)
            totals[(pipe, n)] = totals.get((pipe, n), 0) + t
            cells.append(hours(t))
        totals[(pipe, 0)] = totals.get((pipe, 0), 0) + iters * w
        print(f"| {pipe} | {phase} | {hours(iters * w)} | " + " | ".join(cells) + " |")
    for pipe in [LIU, GO, AZJL]:
        cells = [hours(totals[(pipe, n)]) for n in NODES]
        print(f"| **{pipe}** | **all** | **{hours(totals[(pipe, 0)])}** | " + " | ".join(f"**{c}**" for c in cells) + " |")


if __name__ == "__main__":
    main()
