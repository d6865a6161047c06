#!/usr/bin/env python3
"""Summarise the arms of a `runs/go-exploit.sh` grid measured against reference opponents
(Connect Four 7x6, 9x9 Go: no exact truth) as Markdown tables: for each arm, the win rate
against MCTS-Solver at each multiplier at chosen iterations, the AUC against MCTS-Solver 10x
(the paper's metric: win rates summed over iterations), self-play moves, and, where present,
the best-move accuracy on Pons's Connect Four test sets; mean and 95% t-interval over the
seeds whose runs reached the iteration.

    python3 runs/arms_summarise.py STORE.db PREFIX "ARM ARM ..." [--at 1,5,10,20,30]

Runs are named PREFIX-ARM-sSEED (as runs/go-exploit.sh names them). Reads the views
metrics_wide and runs (docs/store.md).
"""
import sqlite3
import statistics
import sys

T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262}  # Student t, 0.975, by degrees of freedom


def cell(xs, digits=3):
    if not xs:
        return "-"
    m = statistics.mean(xs)
    if len(xs) < 2:
        return f"{m:.{digits}f} (1 seed)"
    h = T975.get(len(xs) - 1, 1.96) * statistics.stdev(xs) / len(xs) ** 0.5
    return f"{m:.{digits}f} ± {h:.{digits}f}"


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
    prefix, arms = sys.argv[2], sys.argv[3].split()
    at = [1, 5, 10, 20, 30]
    if "--at" in sys.argv:
        at = [int(x) for x in sys.argv[sys.argv.index("--at") + 1].split(",")]
    cols = {r[1] for r in db.execute("PRAGMA table_info(metrics_wide)")}

    def runs(arm):
        like = f"{prefix}-{arm}-s%"
        return [r[0] for r in db.execute(
            "SELECT id FROM runs WHERE name LIKE ? ORDER BY name", (like,))]

    def values(arm, metric, i):
        out = []
        for rid in runs(arm):
            row = db.execute(
                f"SELECT {metric} FROM metrics_wide WHERE run_id = ? AND iteration = ?",
                (rid, i)).fetchone()
            if row and row[0] is not None:
                out.append(float(row[0]))
        return out

    def plies(arm, upto):
        """Self-play plies (moves and chance events) of iterations 1..upto, per finished run."""
        out = []
        for rid in runs(arm):
            done = db.execute("SELECT count(*) FROM iterations WHERE run_id = ? AND "
                              "iteration BETWEEN 1 AND ?", (rid, upto)).fetchone()[0]
            if done == upto:
                out.append(float(db.execute(
                    "SELECT sum(plies) FROM run_games WHERE run_id = ? AND iteration <= ?",
                    (rid, upto)).fetchone()[0]))
        return out

    def present(metric):
        return metric in cols and db.execute(
            f"SELECT count({metric}) FROM metrics_wide WHERE name LIKE ?",
            (f"{prefix}-%",)).fetchone()[0] > 0

    mults = [k for k in (1, 10, 100, 1000) if present(f"wr_solver_{k}x")]
    seeds = {arm: len(runs(arm)) for arm in arms}
    print(f"Runs: " + ", ".join(f"{a} {n}" for a, n in seeds.items()))
    for k in mults:
        print(f"\nWin rate against MCTS-Solver {k}x (mean ± 95% t-interval over seeds):\n")
        print("| arm | " + " | ".join(f"it {i}" for i in at) + " |")
        print("|---|" + "---|" * len(at))
        for arm in arms:
            print(f"| {arm} | " + " | ".join(cell(values(arm, f"wr_solver_{k}x", i))
                                           for i in at) + " |")
    last = at[-1]
    print(f"\nAt iteration {last}:\n")
    extra = [c for c in ("c4_best_move", "c4_search_best_move") if present(c)]
    head = ["AUC 10x", "self-play moves (thousands)"] + extra
    print("| arm | " + " | ".join(head) + " |")
    print("|---|" + "---|" * len(head))
    for arm in arms:
        row = [cell(values(arm, "auc_solver_10x", last), 2),
               cell([x / 1000 for x in plies(arm, last)], 0)]
        row += [cell(values(arm, c, last)) for c in extra]
        print(f"| {arm} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
