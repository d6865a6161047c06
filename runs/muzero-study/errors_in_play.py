#!/usr/bin/env python3
"""Where in play a model's moves lose value (docs/muzero.md, "The study"): games of a model
against the optimal player (`tabula play --json`, seeds 0..G-1, the model first on even
seeds), every move of the model valued exactly (`tabula value --json`): the value it lost,
best action's value minus the chosen one's, by where it moved: its first decision as the
first mover (a start position after the roll, the positions ERR_p measures on EWN), its
first as the second mover (after the optimal player's first move), and every later one.

    python3 runs/muzero-study/errors_in_play.py --db STORE --variant ewn:3x3x3 \\
        --players model:ewn-az-seeds/seed=1@80 model:ewn-muzero-seeds/seed=1@80
"""
import argparse
import json
import statistics
import subprocess


def run(args):
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)


def losses(tabula, db, variant, player, games):
    """((seat, decision number), value lost) for each of the player's moves."""
    out = []
    for seed in range(games):
        seat = seed % 2
        players = [player, "optimal"] if seat == 0 else ["optimal", player]
        g = run([tabula, "play", variant, "--db", db, "--players", ",".join(players),
                 "--seed", str(seed), "--json"])
        n = 0
        for e in g["events"]:
            if e["kind"] != "action" or e["player"] != seat:
                continue
            n += 1
            v = run([tabula, "value", variant, e["position"], "--db", db, "--json"])
            values = {a["name"]: a["value"] for a in v["actions"]}
            best = max(values.values())
            out.append(((seat, n), best - values[e["name"]]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--variant", required=True)
    ap.add_argument("--players", nargs="+", required=True,
                    help="player specs as `tabula match` takes them (model:RUN@I: the greedy policy; "
                         "model:RUN@I,sims=N[,tree=rules]: a search)")
    ap.add_argument("--games", type=int, default=400)
    ap.add_argument("--tabula", default="target/release/tabula")
    args = ap.parse_args()
    cols = ["start", "reply", "later"]
    print("| player | " + " | ".join(cols) + " | all |")
    print("|---|" + "--:|" * (len(cols) + 1))
    for p in args.players:
        ls = losses(args.tabula, args.db, args.variant, p, args.games)
        by = {c: [] for c in cols}
        for (seat, n), lost in ls:
            by["later" if n > 1 else ("start" if seat == 0 else "reply")].append(lost)
        cell = lambda xs: f"{statistics.mean(xs):.3f} ({len(xs)})" if xs else "-"
        print(f"| {p} | " + " | ".join(cell(by[c]) for c in cols) + " | "
              + cell([x for _, x in ls]) + " |", flush=True)
    print("\nmean value lost per move (moves): start = the first mover's first decision (on EWN"
          "\nthe positions of S_test), reply = the second mover's first, later = every other")


if __name__ == "__main__":
    main()
