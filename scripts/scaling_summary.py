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
    """Per iteration (progress line order), the phase seconds summed by name."""
    out, cur, trained = [], {}, False
    for raw in open(path, errors="replace").read().replace("\r", "\n").split("\n"):
        line = raw.strip()
        if line.startswith("phase "):
            _, name, secs = line.split()
            if name == "train":
                trained = True
            if trained:
                cur[name] = cur.get(name, 0.0) + float(secs)
        elif line.startswith("it ") and "/" in line.split()[1]:
            out.append(cur)
            cur, trained = {}, False
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
        if not os.path.exists(f"{out}/{spec}-2.csv"):
            continue
        t1, h1, l1 = measure(out, spec, 1, skip)
        t2, h2, l2 = measure(out, spec, 2, skip)
        same = "same heads" if h1 == h2 else "HEADS DIFFER"
        print(f"\n{spec} (iterations from {skip + 1}; {same}; {l1[0]} / {l1[1]}; {l2[0]} / {l2[1]})")
        print(f"| phase | 1 thread (s) | 2 threads (s) | speed-up |")
        print("|---|---:|---:|---:|")
        for k in t1:
            a, b = t1[k], t2.get(k, 0.0)
            ratio = f"{a / b:.2f}x" if b > 0 else "-"
            print(f"| {k} | {a:.2f} | {b:.2f} | {ratio} |")


if __name__ == "__main__":
    main()
