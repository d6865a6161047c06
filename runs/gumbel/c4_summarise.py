#!/usr/bin/env python3
"""Summarise the Connect Four Gumbel sweep (runs/gumbel/c4-gumbel.toml) as Markdown tables:
per grid point, the mistake rates (1 - best-move accuracy, in %) on the six Pons test sets of
the network's greedy move and of the search player at the run's simulations, at the last
iteration, with the run's self-play cost.

    python3 runs/gumbel/c4_summarise.py STORE.db [SWEEP]

Reads the views sweep_runs and metrics_long (docs/store.md).
"""
import sqlite3
import sys

db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
sweep = sys.argv[2] if len(sys.argv) > 2 else "c4-gumbel"
# Pons's names: L = begin (1), middle (2), end (3); R = easy (1), medium (2), hard (3).
SETS = [("l1_r1", "begin-easy"), ("l2_r1", "middle-easy"), ("l3_r1", "end-easy"),
        ("l1_r2", "begin-medium"), ("l2_r2", "middle-medium"), ("l1_r3", "begin-hard")]

runs = db.execute(
    "SELECT run_id, point, status FROM sweep_runs WHERE sweep = ? ORDER BY run_id", (sweep,)
).fetchall()


def last(rid, name):
    row = db.execute(
        "SELECT iteration, value FROM metrics_long WHERE run_id = ? AND metric = ? "
        "ORDER BY iteration DESC LIMIT 1",
        (rid, name),
    ).fetchone()
    return row if row else (None, None)


for prefix, what in [("c4_best_move_", "the network's greedy move"),
                     ("c4_search_best_move_", "the search player at the run's simulations")]:
    print(f"\nMistakes of {what} (%, last iteration):\n")
    print("| point | it | " + " | ".join(n for _, n in SETS) + " |")
    print("|---|---|" + "---|" * len(SETS))
    for rid, point, status in runs:
        cells, it = [], None
        for key, _ in SETS:
            i, v = last(rid, prefix + key)
            it = i if i is not None else it
            cells.append("-" if v is None else f"{100 * (1 - v):.1f}")
        mark = "" if status == "finished" else f" ({status})"
        print(f"| {point}{mark} | {it} | " + " | ".join(cells) + " |")
