"""mctx (JAX) self-play throughput on the workload of benches/frameworks/README.md.

What is measured: batched self-play of Connect Four 7x6 with the real rules inside the search
(AlphaZero with mctx: `recurrent_fn` steps a vectorised JAX Connect Four and evaluates the net at
the new state; reward +1 to the player whose move wins, discount -1 between the two players,
value 0 and discount 0 after a terminal state). PUCT = `mctx.muzero_policy`, Gumbel =
`mctx.gumbel_muzero_policy`. A batch of B games moves one ply per search; finished games restart.
Evaluations counted: B * (simulations + 1) per search (the root plus one leaf per simulation,
terminal leaves included: the batched net evaluates them too).

Settings against mctx's defaults (stated in every JSON line's "notes"):
- PUCT: pb_c_init = 1, pb_c_base = 1e30 (log((N + c2 + 1) / c2) is 0 in float32), and a qtransform
  that returns the raw Q in [-1, 1] with 0 for unvisited children: mctx's default
  `qtransform_by_parent_and_siblings` min-max normalises Q, which would rescale c_puct.
- Gumbel: `qtransform_completed_by_mix_value` with maxvisit_init (c_visit) 50 and value_scale
  (c_scale) 1 (mctx's default value_scale is 0.1), 16 simulations, 16 considered actions.
- Dirichlet noise is mixed into the softmax over all 7 columns, then illegal ones are masked (mctx).

EWN (ewn:5x5x6): `mctx.stochastic_muzero_policy` driven by the real dynamics (mctx_ewn.py), batch 64.

Compile (JIT) time is excluded from rates and reported as compile_s. --batch auto (1 thread)
tries 32, 64, 128, 256 games (--quick-sweep: 32 and 64) for a quarter of --seconds each (at least
2 s) and measures the best.
"""
import functools
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def xla_threads(argv):
    """XLA_FLAGS must be set before jax is imported: 1 thread unless --threads 2 in one process.

    These flags alone leave XLA's Eigen pool at one thread per CPU of the affinity mask (two busy
    tf_XLAEigen threads unpinned, cpu/wall 1.9): `taskset -c 0` is what makes a cell 1-thread."""
    one = "--threads" not in argv or argv[argv.index("--threads") + 1] == "1" or "--processes" in argv
    if one:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   " --xla_cpu_multi_thread_eigen=false"
                                   " intra_op_parallelism_threads=1").strip()


xla_threads(sys.argv)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import mctx  # noqa: E402
import mctx_ewn as ew  # noqa: E402
import numpy as np  # noqa: E402
from typing import NamedTuple  # noqa: E402

ROWS, COLS = 6, 7


# ---------------------------------------------------------------- Connect Four in JAX

class C4(NamedTuple):
    cur: jnp.ndarray      # (6, 7) bool: stones of the side to move (row 0 = bottom)
    opp: jnp.ndarray      # (6, 7) bool: stones of the other side
    heights: jnp.ndarray  # (7,) int32
    ply: jnp.ndarray      # () int32
    done: jnp.ndarray     # () bool


def c4_init():
    z = jnp.zeros((ROWS, COLS), bool)
    return C4(z, z, jnp.zeros(COLS, jnp.int32), jnp.int32(0), jnp.bool_(False))


def four(b):
    """Four in a row anywhere on the (6, 7) bool board."""
    h = b[:, 0:4] & b[:, 1:5] & b[:, 2:6] & b[:, 3:7]
    v = b[0:3] & b[1:4] & b[2:5] & b[3:6]
    d = b[0:3, 0:4] & b[1:4, 1:5] & b[2:5, 2:6] & b[3:6, 3:7]
    a = b[0:3, 3:7] & b[1:4, 2:6] & b[2:5, 1:5] & b[3:6, 0:4]
    return h.any() | v.any() | d.any() | a.any()


def c4_legal(s):
    return (s.heights < ROWS) & ~s.done


def c4_step(s, action):
    """Play `action`; returns (state, reward to the mover). A terminal state does not change."""
    row = s.heights[action]
    mine = s.cur.at[row, action].set(True, mode="drop")
    win = four(mine)
    done = win | (s.ply + 1 == ROWS * COLS)
    new = C4(s.opp, mine, s.heights.at[action].add(1), s.ply + 1, done)
    new = jax.tree_util.tree_map(lambda o, n: jnp.where(s.done, o, n), s, new)
    reward = jnp.where(s.done, 0.0, jnp.where(win, 1.0, 0.0))
    return new, reward


def c4_obs(s):
    return jnp.stack([s.cur, s.opp]).astype(jnp.float32)  # (2, 6, 7), side to move first


# ---------------------------------------------------------------- the net in plain JAX

def init_params(blocks, channels, planes, cells, actions, seed):
    """He-normal weights (std sqrt(2 / fan_in)), zero biases; conv kernels stored HWIO."""
    key = jax.random.PRNGKey(seed)
    keys = iter(jax.random.split(key, 2 * blocks + 3))

    def conv(cin, cout):
        std = (2.0 / (cin * 9)) ** 0.5
        return {"w": std * jax.random.normal(next(keys), (3, 3, cin, cout)), "b": jnp.zeros(cout)}

    def dense(nin, nout):
        std = (2.0 / nin) ** 0.5
        return {"w": std * jax.random.normal(next(keys), (nin, nout)), "b": jnp.zeros(nout)}

    return {"stem": conv(planes, channels),
            "blocks": [(conv(channels, channels), conv(channels, channels)) for _ in range(blocks)],
            "policy": dense(channels * cells, actions),
            "value": dense(channels * cells, 1)}


def count_params(params):
    return sum(int(np.prod(x.shape)) for x in jax.tree_util.tree_leaves(params))


def conv3(p, x):
    """3x3 conv, padding 1, with bias, on NHWC activations.

    NHWC, not NCHW, inside: XLA CPU (jax 0.10.2) keeps an NCHW convolution inside a loop body
    (mctx's simulation loop) in NCHW layout and runs it ~35x slower than an NHWC one (measured:
    34 against 1212 evaluations/s of resnet6x64 at batch 32 in a lax.scan, one core)."""
    y = jax.lax.conv_general_dilated(x, p["w"], (1, 1), ((1, 1), (1, 1)),
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return y + p["b"]


def net(params, x):
    """x (B, planes, H, W) channels first -> (policy logits (B, A), value (B,) in [-1, 1]).

    The trunk runs NHWC; its output is flattened in (C, H, W) order as the workload's net does."""
    h = jax.nn.relu(conv3(params["stem"], jnp.transpose(x, (0, 2, 3, 1))))
    for c1, c2 in params["blocks"]:
        h = jax.nn.relu(conv3(c2, jax.nn.relu(conv3(c1, h))) + h)
    flat = jnp.transpose(h, (0, 3, 1, 2)).reshape(h.shape[0], -1)
    logits = flat @ params["policy"]["w"] + params["policy"]["b"]
    value = jnp.tanh(flat @ params["value"]["w"] + params["value"]["b"])[:, 0]
    return logits, value


# ---------------------------------------------------------------- search

def masked(logits, legal):
    return jnp.where(legal, logits, jnp.finfo(logits.dtype).min)


def root_fn(params, states):
    logits, value = net(params, jax.vmap(c4_obs)(states))
    legal = jax.vmap(c4_legal)(states)
    return mctx.RootFnOutput(prior_logits=masked(logits, legal), value=value, embedding=states)


def recurrent_fn(params, rng, action, states):
    del rng
    new, reward = jax.vmap(c4_step)(states, action)
    logits, value = net(params, jax.vmap(c4_obs)(new))
    legal = jax.vmap(c4_legal)(new)
    out = mctx.RecurrentFnOutput(reward=reward,
                                 discount=jnp.where(new.done, 0.0, -1.0),
                                 prior_logits=masked(logits, legal),
                                 value=jnp.where(new.done, 0.0, value))
    return out, new


def q_raw(tree, node_index):
    """Q as it is (in [-1, 1]), 0 for unvisited children: PUCT with c_puct exactly as stated."""
    q = tree.qvalues(node_index)
    return jnp.where(tree.children_visits[node_index] > 0, q, 0.0)


def search(params, key, states, kind, simulations):
    root = root_fn(params, states)
    invalid = ~jax.vmap(c4_legal)(states)
    if kind == "puct":
        return mctx.muzero_policy(
            params, key, root, recurrent_fn, simulations, invalid_actions=invalid,
            qtransform=q_raw, dirichlet_fraction=common.DIRICHLET_EPS,
            dirichlet_alpha=common.DIRICHLET_ALPHA, pb_c_init=common.C_PUCT, pb_c_base=1e30,
            temperature=1.0)
    qt = functools.partial(mctx.qtransform_completed_by_mix_value,
                           maxvisit_init=common.C_VISIT, value_scale=common.C_SCALE)
    return mctx.gumbel_muzero_policy(
        params, key, root, recurrent_fn, simulations, invalid_actions=invalid, qtransform=qt,
        max_num_considered_actions=common.GUMBEL_ACTIONS, gumbel_scale=1.0)


def batch_init(n):
    return jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (n,) + x.shape), c4_init())


@functools.partial(jax.jit, static_argnums=(3, 4, 5))
def selfplay_step(params, states, key, kind, simulations, restart):
    """One search for every game, one move each; finished games restart when `restart`."""
    out = search(params, key, states, kind, simulations)
    root_visits = out.search_tree.summary().visit_counts.sum(-1)
    obs = jax.vmap(c4_obs)(states)
    new, reward = jax.vmap(c4_step)(states, out.action)
    if restart:
        fresh = batch_init(states.ply.shape[0])
        new = jax.tree_util.tree_map(
            lambda f, n: jnp.where(new.done.reshape((-1,) + (1,) * (n.ndim - 1)), f, n), fresh, new)
    return new, obs, out.action_weights, reward, root_visits


# ---------------------------------------------------------------- rates

def rate_cell(params, kind, sims, batch, seconds, args):
    states = batch_init(batch)
    key = jax.random.PRNGKey(common.SEED)
    t0 = time.perf_counter()
    out = selfplay_step(params, states, key, kind, sims, True)
    jax.block_until_ready(out)
    compile_s = time.perf_counter() - t0
    visits = np.asarray(out[4])
    expected = sims  # mctx: root children's visits sum to the simulation count
    assert (visits == expected).all(), (visits, expected)
    holder = {"states": out[0], "key": key}

    def step():
        holder["key"], sub = jax.random.split(holder["key"])
        res = selfplay_step(params, holder["states"], sub, kind, sims, True)
        holder["states"] = res[0]
        jax.block_until_ready(res[0])
        return batch, batch * (sims + 1)

    common.wait_for_go(args)  # the compiling call was the warm-up
    rec = common.timed(step, seconds)
    rec["compile_s"] = round(compile_s, 2)
    rec["searches"] = rec["moves"] // batch
    return rec


def best_batch(params, kind, sims, args):
    """Rates of each batch over a quarter of --seconds (at least 2 s): (best, sweep, records)."""
    seconds = max(2.0, args.seconds / 4)
    sweep, records = {}, {}
    for b in ((32, 64) if args.quick_sweep else (32, 64, 128, 256)):
        records[b] = rate_cell(params, kind, sims, b, seconds, args)
        sweep[b] = round(records[b]["moves_per_s"], 1)
    return max(sweep, key=sweep.get), sweep, records


# ---------------------------------------------------------------- iteration

def play_games(params, games, sims):
    """`games` complete games side by side (no restart); returns (obs, pi, z) as numpy."""
    states = batch_init(games)
    key = jax.random.PRNGKey(common.SEED + 1)
    traj = []  # per ply: (obs, pi, alive mask, reward)
    alive = np.ones(games, bool)
    while alive.any():
        key, sub = jax.random.split(key)
        states, obs, pi, reward, _ = selfplay_step(params, states, sub, "puct", sims, False)
        traj.append((np.asarray(obs), np.asarray(pi), alive.copy(), np.asarray(reward)))
        alive &= ~np.asarray(states.done)
    return positions(traj, games)


def positions(traj, games):
    """Targets: z = result for the side to move at each position (+1 win, -1 loss, 0 draw)."""
    obs, pis, zs = [], [], []
    for g in range(games):
        plies = [t for t in traj if t[2][g]]
        last_reward = plies[-1][3][g]
        n = len(plies)
        for k, (o, pi, _, _) in enumerate(plies):
            sign = 1.0 if (n - 1 - k) % 2 == 0 else -1.0
            obs.append(o[g])
            pis.append(pi[g])
            zs.append(sign * last_reward)
    return np.stack(obs), np.stack(pis), np.asarray(zs, np.float32)


def loss_fn(params, obs, pi, z):
    logits, v = net(params, obs)
    ce = -(pi * jax.nn.log_softmax(logits)).sum(-1).mean()
    return ce + ((v - z) ** 2).mean()


@jax.jit
def sgd_step(params, mom, obs, pi, z):
    """PyTorch's SGD: g += wd * p; buf = m * buf + g; p -= lr * (g + m * buf) (Nesterov)."""
    it = common.ITERATION
    grads = jax.grad(loss_fn)(params, obs, pi, z)
    grads = jax.tree_util.tree_map(lambda g, p: g + it["weight_decay"] * p, grads, params)
    mom = jax.tree_util.tree_map(lambda b, g: it["momentum"] * b + g, mom, grads)
    params = jax.tree_util.tree_map(lambda p, g, b: p - it["lr"] * (g + it["momentum"] * b),
                                    params, grads, mom)
    return params, mom


def train(params, data, steps, batch):
    obs, pi, z = data
    rng = np.random.default_rng(common.SEED)
    mom = jax.tree_util.tree_map(jnp.zeros_like, params)
    for _ in range(steps):
        idx = rng.integers(0, len(z), batch)
        params, mom = sgd_step(params, mom, obs[idx], pi[idx], z[idx])
    jax.block_until_ready(params)
    return params


def iteration_cell(params, args):
    it = common.iteration_settings(args)
    # compile both programs first (one search step of the game batch, one SGD step), then time
    t0 = time.perf_counter()
    out = selfplay_step(params, batch_init(it["games"]), jax.random.PRNGKey(0), "puct",
                        args.simulations, False)
    obs, pi = np.asarray(out[1]), np.asarray(out[2])
    train(params, (obs, pi, np.zeros(len(obs), np.float32)), 1, it["batch"])
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    data = play_games(params, it["games"], args.simulations)
    t1 = time.perf_counter()
    train(params, data, it["train_steps"], it["batch"])
    t2 = time.perf_counter()
    return {"kind": "iteration", "games": it["games"], "positions": len(data[2]),
            "train_steps": it["train_steps"], "selfplay_s": round(t1 - t0, 3),
            "train_s": round(t2 - t1, 3), "iteration_s": round(t2 - t0, 3),
            "compile_s": round(compile_s, 2),
            "parallelism": "%d games batched, %s" % (it["games"], thread_words(args))}


# ---------------------------------------------------------------- EWN: stochastic_muzero_policy

def ewn_decision_fn(params, rng, action, states):
    """state + move -> afterstate; the net on the afterstate's board (kept for the chance step)."""
    del rng
    after = jax.vmap(ew.move)(states, action)
    logits, value = net(params, jax.vmap(ew.observation)(after))
    after_value = jnp.where(after.done, after.won.astype(jnp.float32), -value)
    out = mctx.DecisionRecurrentFnOutput(chance_logits=jnp.zeros((action.shape[0], 6)),
                                         afterstate_value=after_value)
    return out, (after, logits, value)


def ewn_chance_fn(params, rng, die, afterstate):
    """afterstate + die -> state: priors over this die's legal moves from the kept net output."""
    del params, rng
    after, logits, value = afterstate
    states = jax.vmap(ew.roll)(after, die)
    legal = jax.vmap(ew.legal)(states)
    out = mctx.ChanceRecurrentFnOutput(action_logits=masked(logits, legal),
                                       value=jnp.where(after.done, 0.0, value),
                                       reward=after.won.astype(jnp.float32),
                                       discount=jnp.where(after.done, 0.0, -1.0))
    return out, states


@functools.partial(jax.jit, static_argnums=(3,))
def ewn_step(params, states, key, simulations):
    """One stochastic search per game, one move each; the next die; finished games restart."""
    k_search, k_die, k_new = jax.random.split(key, 3)
    logits, value = net(params, jax.vmap(ew.observation)(states))
    legal = jax.vmap(ew.legal)(states)
    root = mctx.RootFnOutput(prior_logits=masked(logits, legal), value=value, embedding=states)
    out = mctx.stochastic_muzero_policy(
        params, k_search, root, ewn_decision_fn, ewn_chance_fn, simulations,
        invalid_actions=~legal, qtransform=q_raw, dirichlet_fraction=common.DIRICHLET_EPS,
        dirichlet_alpha=common.DIRICHLET_ALPHA, pb_c_init=common.C_PUCT, pb_c_base=1e30,
        temperature=1.0)
    root_visits = out.search_tree.summary().visit_counts.sum(-1)
    after = jax.vmap(ew.move)(states, out.action)
    n = states.player.shape[0]
    fresh = jax.vmap(ew.initial_jax)(jax.random.split(k_new, n))
    after = jax.tree_util.tree_map(
        lambda f, a: jnp.where(after.done.reshape((-1,) + (1,) * (a.ndim - 1)), f, a), fresh, after)
    dice = jax.random.randint(k_die, (n,), 0, 6)
    return jax.vmap(ew.roll)(after, dice), root_visits


def ewn_states(batch, key):
    k_new, k_die = jax.random.split(key)
    states = jax.vmap(ew.initial_jax)(jax.random.split(k_new, batch))
    return jax.vmap(ew.roll)(states, jax.random.randint(k_die, (batch,), 0, 6))


def ewn_rate_cell(params, sims, batch, seconds, args):
    key = jax.random.PRNGKey(common.SEED)
    t0 = time.perf_counter()
    states, visits = ewn_step(params, ewn_states(batch, key), key, sims)
    jax.block_until_ready(states)
    compile_s = time.perf_counter() - t0
    # stochastic_muzero: the root's decision children's visits sum to the simulation count
    assert (np.asarray(visits) == sims).all(), np.asarray(visits)
    holder = {"states": states, "key": key}

    def step():
        holder["key"], sub = jax.random.split(holder["key"])
        holder["states"], _ = ewn_step(params, holder["states"], sub, sims)
        jax.block_until_ready(holder["states"])
        return batch, batch * (sims + 1)

    step()
    common.wait_for_go(args)
    rec = common.timed(step, seconds)
    rec["compile_s"] = round(compile_s, 2)
    return rec


def ewn_cell(args, rec):
    blocks, channels = common.NETS[args.net]
    params = init_params(blocks, channels, 12, ew.CELLS, ew.ACTIONS, common.SEED)
    rec["params"] = count_params(params)
    assert rec["params"] == common.resnet_params(blocks, channels, 12, 25, 300)
    batch = 64 if args.batch == "auto" else int(args.batch)
    rec["batch"] = batch
    rec.update(ewn_rate_cell(params, args.simulations, batch, args.seconds, args))
    rec["parallelism"] = "batch %d games, %s" % (batch, thread_words(args))
    rec["notes"] = EWN_NOTES
    return rec


EWN_NOTES = ("stochastic_muzero_policy driven by the real EWN dynamics (mctx_ewn, OpenSpiel's "
             "rules/actions/observation, checked vs pyspiel): decision fn = move + net on the "
             "afterstate board, chance fn = die (uniform 1/6 logits) with priors masked to that "
             "die's legal moves; a chance node's outcome is mctx's argmax P / (N + 1) (deterministic "
             "spreading, not sampling); placements and dice of the real game sampled outside the search; "
             "PUCT settings as for Connect Four; batch fixed (no sweep)")


# ---------------------------------------------------------------- main

def thread_words(args):
    if args.threads == 1 or args.processes:
        return "1 XLA thread (taskset -c 0, multi_thread_eigen off)"
    return "XLA multi-thread eigen on 2 cores (taskset -c 0,1)"


NOTES = ("PUCT: pb_c_init 1, pb_c_base 1e30 (log term 0), raw-Q qtransform, unvisited Q 0; "
         "Gumbel: qtransform_completed_by_mix_value maxvisit_init 50, value_scale 1; "
         "visits at the root sum to the simulation count")


def extra_args(p):
    p.add_argument("--batch", default="auto", help="games per search batch, or auto")
    p.add_argument("--quick-sweep", action="store_true", help="--batch auto tries 32 and 64 only")
    p.add_argument("--processes", action="store_true",
                   help="--threads 2 as two 1-thread processes on cores 0 and 1, summed")


def main():
    args = common.cell_args(extra=extra_args)
    blocks, channels = common.NETS[args.net]
    rec = common.base_record("mctx", "mctx %s, jax %s" % (mctx.__version__, jax.__version__),
                             args, common.C4_PARAMS[args.net])
    rec["notes"] = NOTES
    if args.game != "c4:7x6":
        return common.emit(ewn_cell(args, rec))
    if args.threads == 2 and args.processes and not args.sync:
        return common.two_process_cell(
            __file__, lambda t: "batch %s games each, 1 XLA thread each" % t["batch"])
    params = init_params(blocks, channels, 2, ROWS * COLS, COLS, common.SEED)
    assert count_params(params) == common.C4_PARAMS[args.net], count_params(params)
    if args.search == "gumbel":
        rec["simulations"] = args.simulations = common.GUMBEL_SIMULATIONS
    if args.iteration:
        rec.update(iteration_cell(params, args))
        return common.emit(rec)
    measured = None
    if args.batch == "auto":
        batch, sweep, records = best_batch(params, args.search, args.simulations, args)
        rec["batch_sweep_moves_per_s"] = sweep
        if records[batch]["seconds"] >= args.seconds:  # the sweep already measured it long enough
            measured = records[batch]
    else:
        batch = int(args.batch)
    rec["batch"] = batch
    rec.update(measured or rate_cell(params, args.search, args.simulations, batch, args.seconds,
                                     args))
    rec["parallelism"] = "batch %d games, %s" % (batch, thread_words(args))
    common.emit(rec)


if __name__ == "__main__":
    main()
