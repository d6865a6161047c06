#!/usr/bin/env python3
"""Summarise the chance-rule sweeps (runs/chance/) from a store as Markdown tables: per game,
search and N_sim, the final WR_p, ERR_p and MAE_v (iteration N) under each chance rule, mean
[95% t-interval] over the finished seeds, and the difference proportional - sample with its
interval (the seeds paired: the same seed under both rules).

    python3 runs/chance/summarise.py STORE.db [SWEEP ...]   (default: every *-chance sweep)

Reads the views sweep_runs and metrics_long (docs/store.md).
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


def final(rid, name, it):
    row = db.execute(
        "SELECT value FROM metrics_long WHERE run_id = ? AND metric = ? AND iteration = ?",
        (rid, name, it),
    ).fetchone()
    return row[0] if row else None


sweeps = [r[0] for r in db.execute(
    "SELECT DISTINCT sweep FROM sweep_runs WHERE sweep LIKE '%-chance' ORDER BY sweep")]
METRICS = [("wr_p", 100, 1), ("err_p", 1, 4), ("mae_v", 1, 4)]
for sweep in sys.argv[2:] or sweeps:
    # (algorithm, sims) -> rule -> seed index -> {metric: value}
    grid = defaultdict(lambda: defaultdict(dict))
    for point, rid, seed, done, planned in db.execute(
        "SELECT point_json, run_id, seed_index, iterations_done, iterations_planned "
        "FROM sweep_runs WHERE sweep = ? ORDER BY point, seed_index",
        (sweep,),
    ):
        if done != planned:
            continue
        p = json.loads(point)
        key = (p["search.algorithm"], p["search.simulations"])
        grid[key][p["search.chance"]][seed] = {m: final(rid, m, planned) for m, _, _ in METRICS}
    print(f"\n### {sweep}\n")
    print("| search | N_sim | seeds | WR_p % sample | WR_p % proportional | difference "
          "| ERR_p sample | ERR_p proportional | MAE_v sample | MAE_v proportional |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (alg, sims) in sorted(grid, key=lambda k: (k[0] != "puct", k[1])):
        rules = grid[(alg, sims)]
        s, q = rules.get("sample", {}), rules.get("proportional", {})
        paired = sorted(set(s) & set(q))
        if not paired:
            continue
        col = lambda r, m, k, d: interval([r[i][m] for i in paired], k, d)
        diff = interval([q[i]["wr_p"] - s[i]["wr_p"] for i in paired], 100, 1)
        print(f"| {alg} | {sims} | {len(paired)} | {col(s, 'wr_p', 100, 1)} "
              f"| {col(q, 'wr_p', 100, 1)} | {diff} | {col(s, 'err_p', 1, 4)} "
              f"| {col(q, 'err_p', 1, 4)} | {col(s, 'mae_v', 1, 4)} | {col(q, 'mae_v', 1, 4)} |")
