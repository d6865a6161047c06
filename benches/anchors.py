#!/usr/bin/env python3
"""Issue 47's older speed anchors, measured side by side in one run (docs/frameworks.md,
"The older anchors"):

  - the exact solve of `cdc:GGCC` against the hash-map prototype (`examples/hashmap_solver.rs`),
    wall and CPU, goals 8x and 6x;
  - Connect Four 7x6 exact scores over `Test_L2_R2` and `Test_L1_R2` against Pascal Pons'
    solver (github.com/PascalPons/connect4, built with its own makefile, `g++ -O3`, no
    opening book), CPU, goal 0.3x his time;
  - MCTS with one random rollout a leaf on `ewn:5x5x6` and `c4:7x6` against OpenSpiel's
    `MCTSBot` (`benches/openspiel_compare.py`), goal 10x.

Usage (from the repository root; CI does not run it; about 10 minutes with every set whole):

    python3 benches/anchors.py --pons DIR [--l1r2 N] [--rounds 2] [--venv DIR] [--json]

DIR holds a checkout of Pons' repository; the script builds `c4solver` there with `make` if it
is missing. Each pair runs one after the other (ours, then the anchor) `--rounds` times; CPU is
user + system of the child process. The load average is printed before and after.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data", "connect4")


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def timed(cmd, stdin=None):
    """Runs `cmd` (its output discarded, and the error stream too where it gets `stdin`:
    Pons' main says on it that it has no opening book); returns (wall seconds, CPU seconds
    of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, input=stdin, stdout=subprocess.DEVNULL, check=True,
                   stderr=subprocess.DEVNULL if stdin is not None else None,
                   text=stdin is not None)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def ggcc(rounds):
    tabula = os.path.join(ROOT, "target", "release", "tabula")
    proto = os.path.join(ROOT, "target", "release", "examples", "hashmap_solver")
    pairs = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as d:
            ours = timed([tabula, "--db", os.path.join(d, "s.db"), "solve", "cdc:GGCC", "--json"])
        theirs = timed([proto, "cdc:GGCC"])
        pairs.append((ours, theirs))
    return pairs


def connect4(pons, name, first, rounds):
    path = os.path.join(DATA, name)
    with open(path) as f:
        lines = f.read().splitlines()[:first]
    moves = "".join(line.split()[0] + "\n" for line in lines)
    ours_cmd = [os.path.join(ROOT, "target", "release", "examples", "c4_testsets"), path,
                "--first", str(len(lines))]
    pairs = []
    for _ in range(rounds):
        ours = timed(ours_cmd)
        theirs = timed([os.path.join(pons, "c4solver")], stdin=moves)
        pairs.append((ours, theirs))
    return len(lines), pairs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pons", required=True, help="a checkout of PascalPons/connect4")
    ap.add_argument("--l1r2", type=int, default=1000, help="positions of Test_L1_R2 (1000: all)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--venv", default=os.path.join(ROOT, ".venv-openspiel"))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    if not os.path.exists(os.path.join(args.pons, "c4solver")):
        subprocess.run(["make", "c4solver"], cwd=args.pons, check=True)
    subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "tabula", "--example",
                    "hashmap_solver", "--example", "c4_testsets"], cwd=ROOT, check=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.strip()
    started, load_before = time.strftime("%Y-%m-%d %H:%M"), load()
    out = {"commit": commit, "started": started, "load_before": load_before}
    out["ggcc"] = ggcc(args.rounds)
    out["l2r2"] = connect4(args.pons, "Test_L2_R2", 1000, args.rounds)
    out["l1r2"] = connect4(args.pons, "Test_L1_R2", args.l1r2, args.rounds)
    rollouts = subprocess.run([sys.executable, os.path.join(ROOT, "benches", "openspiel_compare.py"),
                               "--venv", args.venv, "--core", "1", "--json"],
                              cwd=ROOT, check=True, capture_output=True, text=True).stdout
    out["rollouts"] = json.loads(rollouts)
    out["load_after"] = load()
    if args.json:
        print(json.dumps(out, indent=2))
        return

    def span(xs):
        lo, hi = min(xs), max(xs)
        return f"{lo:.2f}" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}-{hi:.2f}"

    print(f"tabula {commit}, {started}, load {load_before} before, {out['load_after']} after")
    print(f"{'anchor':<52}{'tabula':>14}{'anchor':>14}{'ratio':>12}  goal")
    g = out["ggcc"]
    print(f"{'cdc:GGCC solve / hash-map prototype, wall (s)':<52}{span([o[0] for o, _ in g]):>14}"
          f"{span([t[0] for _, t in g]):>14}{span([t[0] / o[0] for o, t in g]):>11}x  8x")
    print(f"{'the same, CPU (s)':<52}{span([o[1] for o, _ in g]):>14}"
          f"{span([t[1] for _, t in g]):>14}{span([t[1] / o[1] for o, t in g]):>11}x  6x")
    for key, name in (("l2r2", "Test_L2_R2"), ("l1r2", "Test_L1_R2")):
        n, pairs = out[key]
        label = f"c4:7x6 {name} ({n} positions) / Pons, CPU (s)"
        print(f"{label:<52}{span([o[1] for o, _ in pairs]):>14}"
              f"{span([t[1] for _, t in pairs]):>14}{span([o[1] / t[1] for o, t in pairs]):>11}x"
              "  0.3x")
    for r in out["rollouts"]:
        label = f"MCTS rollouts {r['tabula']['variant']} / OpenSpiel (sims/s)"
        print(f"{label:<52}{r['tabula']['sims_per_second']:>14,.0f}"
              f"{r['openspiel']['sims_per_second']:>14,.0f}{r['speedup']:>11.1f}x  10x"
              f"  (by CPU time {r['cpu_speedup']:.1f}x)")


if __name__ == "__main__":
    sys.exit(main())
