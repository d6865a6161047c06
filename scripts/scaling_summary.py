#!/usr/bin/env python3
"""Per-phase 1 -> 2 thread speed-ups of scripts/measure-scaling.sh's runs (docs/scaling.md).

usage: scripts/scaling_summary.py OUT [SPEC=SKIP ...]   (SKIP: leading iterations left out,
e.g. c7=1 leaves out the checkers pipeline's stage 1; default ewn=0 c4=0 c7=1)

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


def main():
    out = sys.argv[1]
    skips = {"ewn": 0, "c4": 0, "c7": 1}
    for a in sys.argv[2:]:
        k, v = a.split("=")
        skips[k] = int(v)
    for spec, skip in skips.items():
        threads = sorted(
            int(f[len(spec) + 1 : -4])
            for f in os.listdir(out)
            if f.startswith(spec + "-") and f.endswith(".csv")
        )
        if len(threads) < 2:
            continue
        runs = {t: measure(out, spec, t, skip) for t in threads}
        base = runs[threads[0]]
        same = all(r[1] == base[1] for r in runs.values())
        print(f"\n{spec} (iterations from {skip + 1}; {'same heads' if same else 'HEADS DIFFER'})")
        for t in threads:
            print(f"  {t} threads: {'; '.join(l for l in runs[t][2] if l)}")
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
