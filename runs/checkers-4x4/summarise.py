#!/usr/bin/env python3
"""The table of docs/checkers.md, "On a solved board": for each sweep named on the command
line (its runs are `SWEEP/seed=S` in the store), WR_p untrained, final and mean over training,
the score against the greedy player untrained and final, and the final draw share against it,
as mean +- 95% t-interval over the seeds.

    python3 runs/checkers-4x4/summarise.py STORE.db cc4-pipeline-seeds-liu cc4-rasa-seeds-liu
"""
import math
import sqlite3
import statistics
import sys

# Student's t, 97.5% quantile, by degrees of freedom.
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571}


def interval(xs):
    m = statistics.mean(xs)
    if len(xs) < 2:
        return f"{m:.3f}"
    h = T975.get(len(xs) - 1, 1.96) * statistics.stdev(xs) / math.sqrt(len(xs))
    return f"{m:.3f} ± {h:.3f}"


def main():
    db, sweeps = sys.argv[1], sys.argv[2:]
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    print("| sweep | seeds | iterations | WR_p untrained | WR_p final | WR_p mean over training "
          "| vs greedy untrained | vs greedy final | draws vs greedy, final |")
    print("|---|---|---|---|---|---|---|---|---|")
    for sweep in sweeps:
        runs = con.execute("SELECT id FROM runs WHERE name LIKE ? ORDER BY id",
                           (f"{sweep}/seed=%",)).fetchall()
        cols = {k: [] for k in ("w0", "wl", "wm", "g0", "gl", "dl")}
        last = 0
        for (rid,) in runs:
            def metric(name):
                return dict(con.execute(
                    "SELECT iteration, value FROM metrics WHERE run_id = ? AND name = ?",
                    (rid, name)).fetchall())
            wr, gr, dr = metric("wr_p"), metric("wr_greedy"), metric("greedy_draw_share")
            last = max(wr)
            cols["w0"].append(wr[0])
            cols["wl"].append(wr[last])
            cols["wm"].append(statistics.mean(v for i, v in wr.items() if i > 0))
            cols["g0"].append(gr[0])
            cols["gl"].append(gr[last])
            cols["dl"].append(dr[last])
        row = [interval(cols[k]) for k in ("w0", "wl", "wm", "g0", "gl")]
        draws = f"{100 * statistics.mean(cols['dl']):.0f}%"
        print(f"| {sweep} | {len(runs)} | {last} | " + " | ".join(row) + f" | {draws} |")


if __name__ == "__main__":
    main()
