#!/usr/bin/env python3
"""Self-play throughput of tabula beside mctx, OpenSpiel and LightZero: one markdown table.

    python3 benches/frameworks/run.py [--frameworks mctx,openspiel,lightzero,tabula]
        [--seconds 20] [--venvs target/frameworks] [--json out.jsonl] [--quick]

Each framework gets its own virtual environment under --venvs (created here on first use from
benches/frameworks/requirements-<fw>.txt) and runs the same workload (README.md beside this file)
cell by cell, one process tree at a time, never two frameworks at once. Each cell prints one JSON
line; this script collects them, records `uptime` before and after each framework, and prints the
rates table (rows: game, net, search, simulations, threads; per framework moves/s and evals/s) and
the iterations table. tabula's cells come from target/release/examples/selfplay_bench (skipped
with a message when it is not built). --quick: 2 s per cell, 8-game iterations, 20 train steps.
Standard library only.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FRAMEWORKS = ["mctx", "openspiel", "lightzero", "tabula"]
SCRIPTS = {"mctx": "mctx_bench.py", "openspiel": "openspiel_bench.py",
           "lightzero": "lightzero_bench.py"}
TABULA = os.path.join(ROOT, "target", "release", "examples", "selfplay_bench")
NETS = ["resnet2x16", "resnet6x64"]
SEARCHES = [("puct", 50), ("puct", 200), ("gumbel", 16)]


def rate_cells():
    """(game, net, search, simulations, threads) of every rate row, in table order."""
    cells = [("c4:7x6", n, s, k, t) for n in NETS for s, k in SEARCHES for t in (1, 2)]
    return cells + [("ewn:5x5x6", "resnet2x16", "puct", 50, 1)]


def iteration_cells():
    return [("c4:7x6", n, "puct", 50, t) for n in NETS for t in (1, 2)]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


# ---------------------------------------------------------------- environments

def ensure_venv(fw, venvs):
    venv = os.path.join(venvs, fw)
    py = os.path.join(venv, "bin", "python")
    req = os.path.join(HERE, "requirements-%s.txt" % fw)
    stamp = os.path.join(venv, ".requirements")
    want = open(req).read()
    if os.path.exists(stamp) and open(stamp).read() == want:
        return py
    log("[%s] installing %s into %s" % (fw, req, venv))
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([py, "-m", "pip", "install", "-q", "-r", req], check=True)
    with open(stamp, "w") as f:
        f.write(want)
    return py


# ---------------------------------------------------------------- running cells

def run_json(cmd):
    """Run one cell; its last stdout line is the JSON record (stderr passes through)."""
    log("  $ " + " ".join(cmd))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        return {"error": "exit %d" % p.returncode}
    return json.loads(lines[-1])


def pin(threads):
    return ["taskset", "-c", "0" if threads == 1 else "0,1"]


def cell_argv(cell, opts, iteration=False):
    game, net, search, sims, threads = cell
    argv = ["--game", game, "--net", net, "--search", search, "--simulations", str(sims),
            "--threads", str(threads), "--seconds", str(opts.seconds)]
    if iteration:
        argv += ["--iteration"] + (["--quick"] if opts.quick else [])
    return argv


def python_cell(fw, py, cell, opts, iteration=False, extra=()):
    script = os.path.join(HERE, SCRIPTS[fw])
    argv = cell_argv(cell, opts, iteration) + list(extra)
    if cell[4] == 2 and not iteration:
        return run_json([py, script] + argv)  # the script starts two pinned processes
    return run_json(pin(cell[4]) + [py, script] + argv)


def mctx_rate(py, cell, opts, batches):
    """1 thread: sweep the batch; 2 threads: one process on 2 cores and 2 processes, the better."""
    key = cell[:4]
    script = os.path.join(HERE, SCRIPTS["mctx"])
    if cell[4] == 1:
        sweep = ["--batch", "auto"] + (["--quick-sweep"] if opts.quick else [])
        rec = run_json(pin(1) + [py, script] + cell_argv(cell, opts) + sweep)
        batches[key] = rec.get("batch", 64)
        return rec
    batch = ["--batch", str(batches.get(key, 64))]
    one = run_json(pin(2) + [py, script] + cell_argv(cell, opts) + batch)
    two = run_json([py, script] + cell_argv(cell, opts) + batch + ["--processes"])
    best, other = (one, two) if one.get("moves_per_s", 0) >= two.get("moves_per_s", 0) else (two, one)
    best["other_mode"] = {"parallelism": other.get("parallelism"),
                          "moves_per_s": other.get("moves_per_s"), "error": other.get("error")}
    return best


def tabula_cell(cell, opts, iteration=False):
    game, net, search, sims, threads = cell
    argv = [TABULA, "--net", net, "--search", search, "--simulations", str(sims),
            "--threads", str(threads), "--seconds", str(opts.seconds), "--game", game]
    if iteration:
        argv += ["--iteration", "--games", "8" if opts.quick else "32",
                 "--train-steps", "20" if opts.quick else "100"]
    return run_json(pin(threads) + argv)


def run_framework(fw, opts):
    """All cells of one framework: (rate records, iteration records)."""
    if fw == "tabula":
        if not os.path.exists(TABULA):
            log("[tabula] skipped: %s is not built (cargo build --release --example "
                "selfplay_bench)" % TABULA)
            return [], []
        rates = [tag(tabula_cell(c, opts), fw, c, "rate") for c in rate_cells()]
        iters = [tag(tabula_cell(c, opts, True), fw, c, "iteration") for c in iteration_cells()]
        for r in rates + iters:
            save(opts, r)
        return rates, iters
    py = ensure_venv(fw, opts.venvs)
    batches = {}
    rates = []
    for cell in rate_cells():
        if fw == "mctx" and cell[0] == "c4:7x6":
            rec = mctx_rate(py, cell, opts, batches)
        else:
            rec = python_cell(fw, py, cell, opts)
        rates.append(tag(rec, fw, cell, "rate"))
        save(opts, rates[-1])
    iters = []
    for cell in iteration_cells():
        iters.append(tag(python_cell(fw, py, cell, opts, iteration=True), fw, cell, "iteration"))
        save(opts, iters[-1])
    return rates, iters


def save(opts, rec):
    """Append one record to --json as soon as it is measured (a long run keeps what it did)."""
    log("    -> " + ", ".join("%s %s" % (k, rec[k]) for k in
                             ("moves_per_s", "evals_per_s", "iteration_s", "unsupported", "error")
                             if k in rec))
    if opts.json:
        with open(opts.json, "a") as f:
            f.write(json.dumps(rec) + "\n")


def tag(rec, fw, cell, kind):
    """Every record carries its cell's key and kind, even a failed one."""
    rec["kind"] = kind
    rec.setdefault("framework", fw)
    for k, v in zip(("game", "net", "search", "simulations", "threads"), cell):
        rec.setdefault(k, v)
    rec["cell"] = list(cell)
    return rec


# ---------------------------------------------------------------- tables

def fmt(rec, key):
    if rec is None:
        return "-"
    if "unsupported" in rec:
        return "none"
    if "error" in rec:
        return "error"
    v = rec.get(key)
    return "-" if v is None else ("%.0f" % v if v >= 100 else "%.1f" % v)


def table(records, cells, columns, fws):
    by = {(r["framework"], tuple(r["cell"])): r for r in records}
    head = ["game", "net", "search", "sims", "threads"] + [
        "%s %s" % (fw, label) for fw in fws for _, label in columns]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for cell in cells:
        row = [str(x) for x in cell]
        for fw in fws:
            row += [fmt(by.get((fw, tuple(cell))), key) for key, _ in columns]
        out.append("| " + " | ".join(row) + " |")
    return "\n".join(out)


def lead(records, cells, fws):
    """tabula's moves/s over the best other framework's, per rate row (issue 47's goal: 2x)."""
    by = {(r["framework"], tuple(r["cell"])): r for r in records}
    out = ["| game | net | search | sims | threads | tabula moves/s | best other | ratio |",
           "|---|---|---|---|---|---|---|---|"]
    for cell in cells:
        ours = by.get(("tabula", tuple(cell)), {}).get("moves_per_s")
        others = [(by[(fw, tuple(cell))].get("moves_per_s") or 0, fw) for fw in fws
                  if fw != "tabula" and (fw, tuple(cell)) in by]
        best = max(others, default=(0, "-"))
        ratio = "%.2f" % (ours / best[0]) if ours and best[0] else "-"
        out.append("| %s | %s | %s | %s |" % (
            " | ".join(str(x) for x in cell), "-" if ours is None else "%.1f" % ours,
            "%.1f (%s)" % best if best[0] else "-", ratio))
    return "\n".join(out)


def notes(records):
    lines = []
    seen = set()
    for r in records:
        for key in ("unsupported", "parallelism", "version"):
            text = r.get(key)
            if text and (r["framework"], key, text) not in seen:
                seen.add((r["framework"], key, text))
                lines.append("- %s %s: %s" % (r["framework"], key, text))
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--venvs", default=os.path.join(ROOT, "target", "frameworks"))
    p.add_argument("--json", help="also write every record, one JSON line each, to this file "
                   "(appended cell by cell)")
    p.add_argument("--quick", action="store_true", help="2 s cells, 8-game iterations")
    opts = p.parse_args()
    if opts.quick:
        opts.seconds = 2.0
    opts.venvs = os.path.abspath(opts.venvs)
    fws = [f for f in opts.frameworks.split(",") if f]
    if opts.json:
        open(opts.json, "w").close()
    records, loads = [], []
    for fw in fws:
        before = uptime()
        t0 = time.time()
        rates, iters = run_framework(fw, opts)
        loads.append("- %s (%.0f s): before `%s`; after `%s`" % (fw, time.time() - t0, before, uptime()))
        records += rates + iters
    rates = [r for r in records if r.get("kind") != "iteration"]
    iters = [r for r in records if r.get("kind") == "iteration"]
    print("## Self-play rates (%s s per cell%s)\n" % (opts.seconds, ", --quick" if opts.quick else ""))
    print(table(rates, rate_cells(), [("moves_per_s", "moves/s"), ("evals_per_s", "evals/s")], fws))
    if "tabula" in fws:
        print("\n## tabula against the best other framework (moves/s)\n")
        print(lead(rates, rate_cells(), fws))
    print("\n## Iterations (PUCT 50; self-play %s games + %s SGD steps), seconds\n" % (
        (8, 20) if opts.quick else (32, 100)))
    print(table(iters, iteration_cells(), [("selfplay_s", "self-play s"), ("train_s", "train s"),
                                           ("iteration_s", "iteration s")], fws))
    print("\n## Load\n\n" + "\n".join(loads))
    print("\n## Notes\n\n" + notes(records))


if __name__ == "__main__":
    main()
