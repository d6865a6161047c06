#!/usr/bin/env python3
"""The MuZero study's tables (docs/muzero.md, "The study"): each arm's final metrics (the last
iteration of each finished run), mean and 95% Student-t interval over the seeds, read from
the store with `tabula sql --json`.

    python3 runs/muzero-study/summarise.py --db STORE --game ewn
"""
import argparse
import json
import math
import statistics
import subprocess

# Two-sided 95% Student-t quantiles by degrees of freedom.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571}
ARMS = ["az", "muzero", "smz", "smz-paper"]
METRICS = ["wr_p", "err_p", "mae_v", "mae_v_depth_1", "mae_v_depth_3", "mae_v_depth_5",
           "mae_root_model", "mae_root_rules", "code_usage", "tv_chance"]


def show(xs):
    if not xs:
        return "-"
    m = statistics.mean(xs)
    if len(xs) < 2:
        return f"{m:.3f}"
    h = T95.get(len(xs) - 1, 1.96) * statistics.stdev(xs) / math.sqrt(len(xs))
    return f"{m:.3f} ± {h:.3f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--game", required=True, help="ewn or cdc (the sweeps' prefix)")
    ap.add_argument("--tabula", default="target/release/tabula")
    args = ap.parse_args()
    q = ("SELECT r.name, m.metric, m.value FROM metrics_long m JOIN runs r ON r.id = m.run_id "
         "WHERE m.iteration = r.iterations_planned AND r.iterations_done = r.iterations_planned "
         f"AND r.name LIKE '{args.game}-%-seeds/seed=%'")
    out = subprocess.run([args.tabula, "sql", "--db", args.db, "--json", q],
                         check=True, capture_output=True, text=True).stdout
    rows = json.loads(out)
    rows = rows["rows"] if isinstance(rows, dict) else rows
    vals = {}
    for r in rows:
        name, metric, value = (r["name"], r["metric"], r["value"]) if isinstance(r, dict) else r
        arm = name.split("/")[0][len(args.game) + 1:-len("-seeds")]
        vals.setdefault(arm, {}).setdefault(metric, []).append(value)
    print("| arm | seeds | " + " | ".join(METRICS) + " |")
    print("|---|--:|" + "--:|" * len(METRICS))
    for arm in ARMS + sorted(a for a in vals if a not in ARMS):
        if arm in vals:
            n = len(vals[arm].get("wr_p", []))
            print(f"| {arm} | {n} | " + " | ".join(show(vals[arm].get(m, [])) for m in METRICS)
                  + " |")


if __name__ == "__main__":
    main()
