#!/usr/bin/env python3
"""Summarise a budget sweep (docs/budgets.md) from a store, read-only.

    python3 runs/budgets/summarise.py DB SWEEP_NAME [--at 1,2,5,10,20,50,100]

For each grid point (the sweep's axis values, from the run names SWEEP/key=value/seed=S),
as mean (min..max) over seeds: games per iteration (mean over iterations), self-play moves
per iteration, self-play seconds per iteration, WR_p at the last iteration, the mean WR_p over
iterations 1..N (the area under the curve divided by N), ERR_p and MAE_v at the last
iteration; then the mean WR_p by iteration (every iteration, or those of `--at`).
"""
import sqlite3
import sys
from collections import defaultdict


def stat(xs, fmt):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    m = sum(xs) / len(xs)
    if len(xs) == 1:
        return fmt.format(m)
    return f"{fmt.format(m)} ({fmt.format(min(xs))}..{fmt.format(max(xs))})"


def main():
    args = sys.argv[1:]
    at = None
    if "--at" in args:
        k = args.index("--at")
        try:
            at = [int(x) for x in args[k + 1].split(",")]
        except (IndexError, ValueError):
            sys.exit("--at: expected iterations separated by commas, e.g. --at 1,10,100")
        del args[k:k + 2]
    if len(args) != 2:
        sys.exit(__doc__.strip().split("\n\n")[1])
    db, sweep = args
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    runs = con.execute(
        "SELECT id, name FROM runs WHERE name LIKE ? ORDER BY id", (sweep + "/%",)
    ).fetchall()
    points = defaultdict(list)
    for rid, name in runs:
        point = "/".join(name.split("/")[1:-1]) or "-"
        points[point].append(rid)
    curves = {}
    print("| point | runs | games/it | moves/it | self-play s/it | WR_p last | WR_p mean | ERR_p last | MAE_v last |")
    print("|---|---|---|---|---|---|---|---|---|")
    for point, ids in points.items():
        cols = defaultdict(list)
        curve = defaultdict(list)
        for rid in ids:
            it = con.execute(
                "SELECT avg(games), avg(self_play_seconds), max(iteration) FROM iterations "
                "WHERE run_id = ?", (rid,)).fetchone()
            if it[2] is None:
                continue
            moves = con.execute(
                "SELECT sum(plies) * 1.0 / count(DISTINCT iteration) FROM run_games "
                "WHERE run_id = ?", (rid,)).fetchone()[0]
            m = con.execute(
                "SELECT iteration, wr_p, err_p, mae_v FROM metrics_wide WHERE run_id = ? "
                "AND iteration >= 1 ORDER BY iteration", (rid,)).fetchall()
            if not m:
                continue
            cols["games"].append(it[0])
            cols["secs"].append(it[1])
            cols["moves"].append(moves)
            cols["wr_last"].append(m[-1][1])
            cols["wr_mean"].append(sum(r[1] for r in m) / len(m))
            cols["err"].append(m[-1][2])
            cols["mae"].append(m[-1][3])
            for r in m:
                curve[r[0]].append(r[1])
        curves[point] = curve
        print(f"| {point} | {len(cols['games'])} | {stat(cols['games'], '{:,.0f}')} | "
              f"{stat(cols['moves'], '{:,.0f}')} | {stat(cols['secs'], '{:.2f}')} | "
              f"{stat(cols['wr_last'], '{:.4f}')} | {stat(cols['wr_mean'], '{:.4f}')} | "
              f"{stat(cols['err'], '{:.4f}')} | {stat(cols['mae'], '{:.4f}')} |")
    its = sorted({i for c in curves.values() for i in c})
    if at is not None:
        its = [i for i in at if i in its]
    if not its:
        return
    print()
    print("| point | " + " | ".join(f"it {i}" for i in its) + " |")
    print("|---|" + "---|" * len(its))
    for point, c in curves.items():
        cells = [f"{sum(c[i]) / len(c[i]):.3f}" if c.get(i) else "-" for i in its]
        print(f"| {point} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
