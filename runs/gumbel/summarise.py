#!/usr/bin/env python3
"""Summarise the Gumbel and progressive sweeps from a store as Markdown tables: final WR_p,
ERR_p, MAE_v (iteration N) per grid point, mean [95% t-interval] over the finished seeds, the
best WR_p over the run, the self-play simulations the run spent and its cost in seconds.

    python3 runs/gumbel/summarise.py STORE.db [SWEEP ...]   (default: every sweep)

Reads the views sweep_runs and metrics_long and the table run_games (docs/store.md).
"""
import json
import sqlite3
import statistics
import sys
from collections import defaultdict

T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776}  # Student t, 0.975, by degrees of freedom

db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)


def interval(xs, k=1.0, d=4):
    m = statistics.mean(xs) * k
    if len(xs) < 2:
        return f"{m:.{d}f}"
    h = T975[len(xs) - 1] * statistics.stdev(xs) / len(xs) ** 0.5 * k
    return f"{m:.{d}f} [{m - h:.{d}f}, {m + h:.{d}f}]"


def metric(rid, name, it):
    row = db.execute(
        "SELECT value FROM metrics_long WHERE run_id = ? AND metric = ? AND iteration = ?",
        (rid, name, it),
    ).fetchone()
    return row[0] if row else None


def schedule(sims, it):
    if isinstance(sims, int):
        return sims
    return [n for start, n in sims if start <= it][-1]


sweeps = [r[0] for r in db.execute("SELECT DISTINCT sweep FROM sweep_runs ORDER BY sweep")]
for sweep in sys.argv[2:] or sweeps:
    points = defaultdict(list)
    for point, rid, status, done, planned in db.execute(
        "SELECT point_json, run_id, status, iterations_done, iterations_planned "
        "FROM sweep_runs WHERE sweep = ? ORDER BY point, seed_index",
        (sweep,),
    ):
        if done == planned:
            points[point].append((rid, planned))
    print(f"\n### {sweep}\n")
    print("| search | N_sim | seeds | WR_p % final | WR_p % max | ERR_p final | MAE_v final "
          "| simulations (10^6) | seconds per run |")
    print("|---|---|---|---|---|---|---|---|---|")
    for point, runs in points.items():
        p = json.loads(point)
        sims = p["search.simulations"]
        last = [metric(r, "wr_p", n) for r, n in runs]
        best = [db.execute("SELECT max(value) FROM metrics_long WHERE run_id = ? AND "
                           "metric = 'wr_p'", (r,)).fetchone()[0] for r, _ in runs]
        err = [metric(r, "err_p", n) for r, n in runs]
        mae = [metric(r, "mae_v", n) for r, n in runs]
        total = []
        secs = []
        for r, n in runs:
            t = 0
            for it, plies in db.execute(
                "SELECT iteration, sum(plies) FROM run_games WHERE run_id = ? GROUP BY iteration",
                (r,),
            ):
                t += plies * schedule(sims, it)
            total.append(t / 1e6)
            secs.append(db.execute(
                "SELECT sum(self_play_seconds + training_seconds + evaluation_seconds + "
                "store_seconds) FROM iterations WHERE run_id = ?", (r,)).fetchone()[0])
        shown = sims if isinstance(sims, int) else " -> ".join(str(n) for _, n in sims)
        print(f"| {p['search.algorithm']} | {shown} | {len(runs)} | {interval(last, 100, 1)} "
              f"| {interval(best, 100, 1)} | {interval(err)} | {interval(mae)} "
              f"| {statistics.mean(total):.2f} | {statistics.mean(secs):.0f} |")
