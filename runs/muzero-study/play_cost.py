#!/usr/bin/env python3
"""The learned model's cost in play (docs/muzero.md, "The study"): each final model of the
study's sweeps against the optimal player, three ways: its greedy policy (`model:RUN@I`),
the run's search in its own model (`model:RUN@I,sims=N`: MuZero's learned dynamics, the
network's the rules), and the same search over the game's rules with the same networks
(`model:RUN@I,sims=N,tree=rules`). Prints one row per run and the means per arm.

    python3 runs/muzero-study/play_cost.py --db STORE --variant ewn:3x3x3 \\
        --sweeps ewn-az-seeds ewn-muzero-seeds ewn-smz-seeds ewn-smz-paper-seeds
"""
import argparse
import json
import statistics
import subprocess


def score(tabula, db, variant, a, games, seed):
    out = subprocess.run(
        [tabula, "match", variant, "--db", db, "--a", a, "--b", "optimal",
         "--games", str(games), "--seed", str(seed), "--threads", "1", "--json"],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)["score_a"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--variant", required=True)
    ap.add_argument("--sweeps", nargs="+", required=True)
    ap.add_argument("--tabula", default="target/release/tabula")
    ap.add_argument("--at", type=int, default=80, help="the iteration (default 80)")
    ap.add_argument("--sims", type=int, default=50)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--games", type=int, default=2000)
    args = ap.parse_args()
    ways = [("greedy", ""), ("own search", f",sims={args.sims}"),
            ("rules search", f",sims={args.sims},tree=rules")]
    print("| run | " + " | ".join(w for w, _ in ways) + " |")
    print("|---|" + "--:|" * len(ways))
    means = {}
    for sw in args.sweeps:
        for seed in args.seeds:
            run = f"{sw}/seed={seed}"
            row = [score(args.tabula, args.db, args.variant, f"model:{run}@{args.at}{k}",
                         args.games, 7) for _, k in ways]
            means.setdefault(sw, []).append(row)
            print(f"| {run} | " + " | ".join(f"{x:.3f}" for x in row) + " |", flush=True)
    print()
    print("| arm | " + " | ".join(w for w, _ in ways) + " |")
    print("|---|" + "--:|" * len(ways))
    for sw, rows in means.items():
        cols = list(zip(*rows))
        print(f"| {sw} | " + " | ".join(f"{statistics.mean(c):.3f}" for c in cols) + " |")


if __name__ == "__main__":
    main()
