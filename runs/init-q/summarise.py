#!/usr/bin/env python3
"""Summarise the init_q experiment from a store: final WR_p / ERR_p / MAE_v per setting (mean
and spread over seeds) and the WR_p curve every 10 iterations, as Markdown tables.

    python3 runs/init-q/summarise.py /tmp/fid.db

Runs are matched by name: ewn-3x3x3-n{N}-{init}[-legacy|-only-X]-s{seed} (see docs/init-q-experiment.md).
"""
import re
import sqlite3
import statistics
import sys
from collections import defaultdict

db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
pat = re.compile(r"ewn-3x3x3-n(\d+)-(loss|draw|win|first)(-legacy|-only-[a-z-]+)?-s(\d+)$")
runs = defaultdict(dict)  # (n, init, conventions) -> seed -> run id
for rid, name, done, planned in db.execute(
    "SELECT id, name, iterations_done, iterations_planned FROM runs WHERE status = 'done'"
):
    m = pat.match(name)
    if m and done == planned:
        runs[(int(m[1]), m[2], (m[3] or "-paper")[1:])][int(m[4])] = rid

order = {"loss": 0, "draw": 1, "win": 2, "first": 3}
rank = {"paper": 0, "legacy": 1}
keys = sorted(runs, key=lambda k: (rank.get(k[2], 2), k[2], k[0], order[k[1]]))


def series(rid, col):
    return dict(db.execute(f"SELECT iteration, {col} FROM evaluations WHERE run_id = ?", (rid,)))


def fmt(xs, pct=False):
    k = 100 if pct else 1
    d = 2 if pct else 4
    if len(xs) == 1:
        return f"{xs[0] * k:.{d}f}"
    return f"{statistics.mean(xs) * k:.{d}f} ({min(xs) * k:.{d}f}..{max(xs) * k:.{d}f})"


print("| N_sim | init_q | conventions | seeds | WR_p % last | WR_p % max | ERR_p last | MAE_v last |")
print("|---|---|---|---|---|---|---|---|")
for k in keys:
    ids = [runs[k][s] for s in sorted(runs[k])]
    last = [series(r, "wr_p")[100] for r in ids]
    best = [max(v for i, v in series(r, "wr_p").items() if i > 0) for r in ids]
    err = [series(r, "err_p")[100] for r in ids]
    mae = [series(r, "mae_v")[100] for r in ids]
    conv = k[2]
    print(f"| {k[0]} | {k[1]} | {conv} | {len(ids)} | {fmt(last, True)} | {fmt(best, True)} "
          f"| {fmt(err)} | {fmt(mae)} |")

print()
its = [0, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
print("| N_sim | init_q | conventions | " + " | ".join(f"it {i}" for i in its) + " |")
print("|---|---|---|" + "---|" * len(its))
for k in keys:
    ids = [runs[k][s] for s in sorted(runs[k])]
    ss = [series(r, "wr_p") for r in ids]
    cells = [f"{100 * statistics.mean(s[i] for s in ss):.1f}" for i in its]
    conv = k[2]
    print(f"| {k[0]} | {k[1]} | {conv} | " + " | ".join(cells) + " |")
