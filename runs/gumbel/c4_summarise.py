#!/usr/bin/env python3
"""Summarise the Connect Four Gumbel sweep (runs/gumbel/c4-gumbel.toml) as Markdown tables:
per grid point, the mistake rates (1 - best-move accuracy, in %) on the six Pons test sets of
the network's greedy move and of the search player at the run's simulations, at the last
iteration, mean and 95% interval over the finished seeds (unfinished runs left out).

    python3 runs/gumbel/c4_summarise.py STORE.db [SWEEP]

Reads the views sweep_runs and metrics_long (docs/store.md).
"""
import sqlite3
import statistics
import sys

db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
sweep = sys.argv[2] if len(sys.argv) > 2 else "c4-gumbel"
# Pons's names: L = begin (1), middle (2), end (3); R = easy (1), medium (2), hard (3).
SETS = [("l1_r1", "begin-easy"), ("l2_r1", "middle-easy"), ("l3_r1", "end-easy"),
        ("l1_r2", "begin-medium"), ("l2_r2", "middle-medium"), ("l1_r3", "begin-hard")]

runs = db.execute(
    "SELECT run_id, run_name, status FROM sweep_runs WHERE sweep = ? ORDER BY run_id", (sweep,)
).fetchall()
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776}  # Student t, 0.975, by degrees of freedom


def last(rid, name):
    row = db.execute(
        "SELECT iteration, value FROM metrics_long WHERE run_id = ? AND metric = ? "
        "ORDER BY iteration DESC LIMIT 1",
        (rid, name),
    ).fetchone()
    return row if row else (None, None)


def cell(xs):
    if not xs:
        return "-"
    m = statistics.mean(xs)
    if len(xs) < 2:
        return f"{m:.1f}"
    h = T975[len(xs) - 1] * statistics.stdev(xs) / len(xs) ** 0.5
    return f"{m:.1f} ± {h:.1f}"


# Grid points in run order: the run name without the sweep and the seed.
points = {}
for rid, name, status in runs:
    point = name.split("/")[1]
    points.setdefault(point, []).append((rid, status))
present = [(k, n) for k, n in SETS if any(last(r, "c4_best_move_" + k)[1] is not None
                                           for r, _, _ in runs)]
for prefix, what in [("c4_best_move_", "the network's greedy move"),
                     ("c4_search_best_move_", "the search player at the run's simulations")]:
    print(f"\nMistakes of {what} (%, last iteration; mean ± 95% t-interval over seeds):\n")
    print("| point | seeds | " + " | ".join(n for _, n in present) + " |")
    print("|---|---|" + "---|" * len(present))
    for point, members in points.items():
        done = [rid for rid, status in members if status == "done"]
        cells = []
        for key, _ in present:
            xs = [100 * (1 - v) for v in (last(r, prefix + key)[1] for r in done) if v is not None]
            cells.append(cell(xs))
        print(f"| {point} | {len(done)} of {len(members)} | " + " | ".join(cells) + " |")
