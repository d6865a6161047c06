#!/usr/bin/env python3
"""Per-phase 1 -> 2 thread speed-ups of scripts/measure-scaling.sh's runs (docs/scaling.md).

usage: scripts/scaling_summary.py OUT[,OUT...] [SPEC=SKIP ...]   (SKIP: leading iterations left
out, e.g. c7=1 leaves out the checkers pipeline's stage 1; default ewn=0 c4=0 c7=1). With
several OUT folders (repeats of the same runs), each phase's time is its least over them: the
repeat least disturbed by other work on the machine.

Phases from the `iterations` table (self-play, training, evaluation, store: seconds summed
over the iterations measured) and from the `phase NAME SECONDS` lines the run printed with
TABULA_PHASE_SECONDS set, each assigned to the iteration whose progress line follows it (the
untrained model's evaluation, before the first `train`, is left out). Checks the heads match.
"""
import csv
import os
import sys

TABLE = ["self_play_seconds", "training_seconds", "evaluation_seconds", "store_seconds"]


def blocks(path):
    """Per iteration, the phase seconds summed by name: an iteration's lines begin at its
    `train` line (every learner times one each iteration); the untrained model's evaluation,
    before the first, is left out."""
    out = []
    for line in open(path, errors="replace"):
        parts = line.split()
        if len(parts) != 3 or parts[0] != "phase":
            continue
        if parts[1] == "train":
            out.append({})
        if out:
            out[-1][parts[1]] = out[-1].get(parts[1], 0.0) + float(parts[2])
    return out


def measure(out, spec, threads, skip):
    rows = list(csv.DictReader(open(f"{out}/{spec}-{threads}.csv")))
    phases = blocks(f"{out}/{spec}-{threads}.phases")
    assert len(phases) == len(rows), (spec, threads, len(phases), len(rows))
    total = {}
    for row, ph in list(zip(rows, phases))[skip:]:
        for k in TABLE:
            total[k.replace("_seconds", "")] = total.get(k.replace("_seconds", ""), 0.0) + float(row[k])
        for k, v in ph.items():
            total[k] = total.get(k, 0.0) + v
    load = open(f"{out}/{spec}-{threads}.load").read().split("\n")
    return total, [r["hash"] for r in rows], load


def least(runs):
    """Per phase the least time over repeats; the heads and loads of all."""
    total = {}
    for r in runs:
        for k, v in r[0].items():
            total[k] = min(total.get(k, v), v)
    return total, [tuple(r[1]) for r in runs], [l for r in runs for l in r[2]]


def main():
    outs = sys.argv[1].split(",")
    skips = {"ewn": 0, "c4": 0, "c7": 1}
    for a in sys.argv[2:]:
        k, v = a.split("=")
        skips[k] = int(v)
    for spec, skip in skips.items():
        threads = sorted(
            int(f[len(spec) + 1 : -4])
            for f in os.listdir(outs[0])
            if f.startswith(spec + "-") and f.endswith(".csv")
        )
        if len(threads) < 2:
            continue
        runs = {t: least([measure(o, spec, t, skip) for o in outs]) for t in threads}
        base = runs[threads[0]]
        same = len({h for r in runs.values() for h in r[1]}) == 1
        print(f"\n{spec} (iterations from {skip + 1}; {'same heads' if same else 'HEADS DIFFER'})")
        for t in threads:
            loads = [l.split(": ", 1)[1] for l in runs[t][2] if ": " in l]
            print(f"  {t} threads: {', '.join(loads)}")
        head = " | ".join(f"{t} thr (s) | x" for t in threads[1:])
        print(f"| phase | {threads[0]} thr (s) | {head} |")
        print("|---|---:|" + "---:|---:|" * (len(threads) - 1))
        for k, a in base[0].items():
            cells = []
            for t in threads[1:]:
                b = runs[t][0].get(k, 0.0)
                cells.append(f"{b:.2f} | " + (f"{a / b:.2f}x" if b > 0 else "-"))
            print(f"| {k} | {a:.2f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
