"""What the framework scripts share (stdlib and numpy only, so every venv can import it).

- the workload's constants (c_puct, Dirichlet noise, Gumbel settings, iteration sizes),
- the net sizes and their parameter counts (asserted by every framework),
- the command line of one cell, the JSON line it prints,
- the timed loop (warm up, then count moves and evaluations for --seconds wall seconds),
- "2 threads as two processes": two copies of the same cell pinned to cores 0 and 1 that warm
  up, wait for each other, measure the same window, and whose moves are summed,
- CPU time against wall time, so a 1-thread cell shows that it really used one core.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

C_PUCT = 1.0
DIRICHLET_ALPHA = 1.5
DIRICHLET_EPS = 0.25
GUMBEL_SIMULATIONS = 16
GUMBEL_ACTIONS = 16
C_VISIT = 50.0
C_SCALE = 1.0
SEED = 7  # He-normal initialisation seed (untrained nets)

ITERATION = dict(games=32, train_steps=100, batch=256, lr=0.1, momentum=0.9, weight_decay=1e-4)
QUICK_ITERATION = dict(games=8, train_steps=20, batch=256, lr=0.1, momentum=0.9, weight_decay=1e-4)

# (blocks, channels) and the parameter count of tabula's resnet on Connect Four (2x6x7 in, 7 out)
NETS = {"resnet2x16": (2, 16), "resnet6x64": (6, 64)}
C4_PARAMS = {"resnet2x16": 14968, "resnet6x64": 465864}


def resnet_params(blocks, channels, planes, cells, actions):
    """Parameter count of the workload's net: stem conv, blocks x 2 convs, dense heads."""
    conv = lambda cin, cout: cin * cout * 9 + cout
    trunk = conv(planes, channels) + blocks * 2 * conv(channels, channels)
    heads = channels * cells * actions + actions + channels * cells + 1
    return trunk + heads


assert resnet_params(2, 16, 2, 42, 7) == C4_PARAMS["resnet2x16"]
assert resnet_params(6, 64, 2, 42, 7) == C4_PARAMS["resnet6x64"]


def cell_args(argv=None, extra=None):
    """The command line of one cell (the same for every framework)."""
    p = argparse.ArgumentParser()
    p.add_argument("--net", default="resnet2x16", choices=sorted(NETS))
    p.add_argument("--search", default="puct", choices=["puct", "gumbel"])
    p.add_argument("--simulations", type=int, default=50)
    p.add_argument("--threads", type=int, default=1, choices=[1, 2])
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--game", default="c4:7x6", choices=["c4:7x6", "ewn:5x5x6"])
    p.add_argument("--iteration", action="store_true")
    p.add_argument("--games", type=int, default=None)
    p.add_argument("--quick", action="store_true", help="8-game iteration, 20 train steps")
    p.add_argument("--sync", action="store_true", help=argparse.SUPPRESS)  # child of two processes
    if extra:
        extra(p)
    return p.parse_args(argv)


def iteration_settings(args):
    it = dict(QUICK_ITERATION if args.quick else ITERATION)
    if args.games:
        it["games"] = args.games
    return it


def base_record(framework, version, args, params):
    return {"framework": framework, "version": version, "game": args.game, "net": args.net,
            "params": params, "search": args.search, "simulations": args.simulations,
            "threads": args.threads}


def emit(record):
    print(json.dumps(record), flush=True)


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime


def wait_for_go(args):
    """In a child of a two-process cell: say ready, wait until the parent says go."""
    if args.sync:
        print("READY", flush=True)
        sys.stdin.readline()


def timed(step, seconds):
    """Call step() (returns (moves, evals)) until `seconds` wall seconds have passed."""
    moves = evals = 0
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    while True:
        m, e = step()
        moves += m
        evals += e
        wall = time.perf_counter() - t0
        if wall >= seconds:
            break
    cpu = cpu_seconds() - cpu0
    return {"moves_per_s": moves / wall, "evals_per_s": evals / wall, "moves": moves,
            "evals": evals, "seconds": round(wall, 3), "cpu_per_wall": round(cpu / wall, 3)}


def two_processes(script, argv, env=None):
    """Run the 1-thread cell `argv` twice, pinned to cores 0 and 1, measuring the same window.

    Each child prints READY after its warm-up; both get "go" together; their JSON lines come
    back and the rates are summed. Returns (record of child 0 with summed rates, both records)."""
    children = []
    for core in (0, 1):
        cmd = ["taskset", "-c", str(core), sys.executable, script] + argv + ["--sync"]
        children.append(subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         text=True, env=env))
    for ch in children:
        line = ch.stdout.readline()
        if line.strip() != "READY":
            raise RuntimeError("child did not get ready: %r" % line)
    for ch in children:
        ch.stdin.write("go\n")
        ch.stdin.flush()
    records = []
    for ch in children:
        out, _ = ch.communicate()
        if ch.returncode != 0:
            raise RuntimeError("child failed with %d" % ch.returncode)
        records.append(json.loads(out.strip().splitlines()[-1]))
    total = dict(records[0])
    for key in ("moves", "evals", "moves_per_s", "evals_per_s"):
        if key in total:
            total[key] = sum(r[key] for r in records)
    total["threads"] = 2
    total["cpu_per_wall"] = round(sum(r.get("cpu_per_wall", 0) for r in records), 3)
    return total, records


def two_process_cell(script, each):
    """The 2-thread cell of this command line: it at 1 thread in two pinned processes
    (`two_processes`), the summed record emitted; `each(total)` says what each process ran."""
    argv = [a for a in sys.argv[1:] if a != "--processes"]
    argv[argv.index("--threads") + 1] = "1"
    total, _ = two_processes(os.path.abspath(script), argv)
    total["parallelism"] = "2 processes (taskset -c 0 and -c 1), %s, moves summed" % each(total)
    emit(total)


def version(dist):
    """The installed version of a distribution (package metadata)."""
    from importlib.metadata import version as v
    return v(dist)


def sgd_schedule_doc():
    return ("SGD lr 0.1 momentum 0.9 Nesterov, weight decay 1e-4, batch 256, loss = policy "
            "cross-entropy vs visit distribution + (v - z)^2")
