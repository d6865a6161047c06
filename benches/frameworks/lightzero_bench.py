"""LightZero self-play throughput on the workload of benches/frameworks/README.md.

Search: LightZero's AlphaZero tree `lzero.mcts.ptree.ptree_az.MCTS` (Python): the LightZero 0.2.0
wheel ships no `ctree_alphazero` (its C++ AlphaZero tree), only the MuZero-family C++ trees.
Its config keys set to the workload: num_simulations, pb_c_init = 1, pb_c_base = 1e30 (the term
log((N + c2 + 1) / c2) is then 0), root_dirichlet_alpha 1.5, root_noise_weight 0.25; moves from
`get_next_action(..., temperature=1, sample=True)` (noise at the root, move sampled
proportionally to the visits). The wheel's zoo has no Connect Four: the env the tree steps is ours
(c4_python.C4Env, checked against pyspiel). The net is the workload's, PyTorch, 1 thread, one
position per call of the policy_forward_fn (the tree expands one leaf at a time).

Counting: evals = calls of policy_forward_fn (the root's expansion plus one per simulation whose
leaf is not terminal). The root's children visits sum to the simulation count. An unvisited
child's value is 0 (Node.value). 2 threads = two processes on cores 0 and 1, moves summed.
Gumbel: LightZero has Gumbel only in its MuZero trees, not AlphaZero: "none".
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from easydict import EasyDict  # noqa: E402
from lzero.mcts.ptree.ptree_az import MCTS  # noqa: E402

import torchnet  # noqa: E402
from c4_python import C4Env, COLS, ROWS  # noqa: E402


def has_ctree_alphazero():
    try:
        import lzero.mcts.ctree.ctree_alphazero  # noqa: F401
        return True
    except ImportError:
        return False


def mcts_config(simulations):
    return EasyDict(dict(num_simulations=simulations, pb_c_init=common.C_PUCT, pb_c_base=1e30,
                         root_dirichlet_alpha=common.DIRICHLET_ALPHA,
                         root_noise_weight=common.DIRICHLET_EPS, max_moves=ROWS * COLS))


class Forward:
    """policy_forward_fn: env -> ({action: prior over legal actions}, value for the side to move)."""

    def __init__(self, model):
        self.model = model
        self.calls = 0

    def __call__(self, env):
        self.calls += 1
        logits, value = torchnet.infer(self.model, env.planes())
        return torchnet.legal_softmax(logits, env.legal_actions), value


def search_move(tree, env, forward, simulations):
    action, probs = tree.get_next_action(env.state_config(), forward, temperature=1.0, sample=True)
    return int(action), np.asarray(probs, np.float32)


def check_root_visits(tree, env, forward, simulations):
    """The root children's visits sum to the simulation count (read from a search's root)."""
    probs = search_move(tree, env, forward, simulations)[1]
    visits = probs * simulations
    assert abs(visits.sum() - simulations) < 1e-3 and np.allclose(visits, np.round(visits), atol=1e-3)


def rate_cell(model, args):
    forward = Forward(model)
    tree = MCTS(mcts_config(args.simulations), simulate_env=C4Env())
    np.random.seed(common.SEED)
    holder = {"env": C4Env(), "games": 0}

    def step():
        env = holder["env"]
        before = forward.calls
        action, _ = search_move(tree, env, forward, args.simulations)
        env.step(action)
        if env.get_done_winner()[0]:
            holder["env"] = C4Env()
            holder["games"] += 1
        return 1, forward.calls - before

    t0 = time.perf_counter()
    check_root_visits(tree, C4Env(), forward, args.simulations)
    warm = time.perf_counter() - t0
    common.wait_for_go(args)
    rec = common.timed(step, args.seconds)
    rec["compile_s"] = round(warm, 2)
    rec["games_finished"] = holder["games"]
    return rec


def play_game_fn(model, simulations):
    def play_game(seed):
        np.random.seed(seed)
        forward = Forward(model)
        tree = MCTS(mcts_config(simulations), simulate_env=C4Env())
        env = C4Env()
        plies = []
        while not env.get_done_winner()[0]:
            action, pi = search_move(tree, env, forward, simulations)
            plies.append((env.planes(), pi, env.current_player))
            env.step(action)
        winner = env.get_done_winner()[1]
        return torchnet.outcome_targets(plies, None if winner == -1 else winner)
    return play_game


def notes():
    return ("ptree_az.MCTS (Python tree; ctree_alphazero in the wheel: %s); pb_c_init 1, "
            "pb_c_base 1e30 (log term 0); unvisited child value 0; root visits sum to the "
            "simulation count; Connect Four env ours (c4_python.C4Env)" % has_ctree_alphazero())


def main():
    args = common.cell_args()
    torch.set_num_threads(1)
    rec = common.base_record("lightzero", "LightZero %s, torch %s" % (
        common.version("LightZero"), torch.__version__), args,
        common.C4_PARAMS[args.net] if args.game == "c4:7x6" else None)
    rec["notes"] = notes()
    if args.game != "c4:7x6":
        rec["unsupported"] = "chance nodes only in Stochastic MuZero's tree (learned model)"
        return common.emit(rec)
    if args.search == "gumbel":
        rec["unsupported"] = "none: Gumbel only in LightZero's MuZero trees, not AlphaZero's"
        return common.emit(rec)
    if args.threads == 2 and not args.iteration and not args.sync:
        return common.two_process_cell(__file__, lambda _: "1 game each")
    model = torchnet.make_net(args.net, 2, ROWS, COLS, COLS, common.C4_PARAMS[args.net])
    if args.iteration:
        rec.update(torchnet.iteration(play_game_fn(model, args.simulations), model, args))
        return common.emit(rec)
    rec.update(rate_cell(model, args))
    rec["parallelism"] = "1 game at a time, 1 process, torch 1 thread"
    common.emit(rec)


if __name__ == "__main__":
    main()
