"""OpenSpiel self-play throughput on the workload of benches/frameworks/README.md.

Search: OpenSpiel's Python `open_spiel.python.algorithms.mcts.MCTSBot` set up as its
alpha_zero actors set it up (`solve=False`, `child_selection_fn=SearchNode.puct_value`,
`dirichlet_noise=(0.25, 1.5)`, `dont_return_chance_node=True`), uct_c = 1, with an evaluator
in the style of `alpha_zero.evaluator.AlphaZeroEvaluator` (an LRU cache of 2**16 inferences keyed
by observation and legal mask, kept across moves and games as an actor keeps it between model
updates) that calls the workload's net in PyTorch (1 thread), one position per call.
OpenSpiel 2.0.2's own AlphaZero models are JAX (flax linen / nnx), not PyTorch: the net here is
ours. The move is sampled proportionally to the root children's visit counts (temperature 1),
as its `_play_game` does before temperature_drop.

Counting: evals = network inferences (cache misses); cache hits are reported apart.
Conventions: OpenSpiel counts the root's own evaluation as one of the simulations, so the root
children's visits sum to simulations - 1; an unvisited child's Q is 0 (puct_value). Terminal
children back up their exact outcome (puct_value returns it even with solve=False).
One game at a time (MCTSBot does not batch); 2 threads = two processes on cores 0 and 1.
EWN: `einstein_wurfelt_nicht` (5x5, 6 cubes a side, die 1..6, start placements by chance);
MCTSBot samples chance outcomes inside the search.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import numpy as np  # noqa: E402
import pyspiel  # noqa: E402
import torch  # noqa: E402
from open_spiel.python.algorithms import mcts  # noqa: E402
from open_spiel.python.utils import lru_cache  # noqa: E402

import torchnet  # noqa: E402

CACHE_SIZE = 2 ** 16


class Game:
    """The pyspiel game and how its observation becomes the net's planes."""

    def __init__(self, name):
        self.name = name
        if name == "c4:7x6":
            self.game = pyspiel.load_game("connect_four")
            self.planes, self.height, self.width = 2, 6, 7
        else:
            self.game = pyspiel.load_game("einstein_wurfelt_nicht")
            self.planes, self.height, self.width = 12, 5, 5
            assert self.game.observation_tensor_shape() == [300]
        self.actions = self.game.num_distinct_actions()

    def to_planes(self, state):
        obs = np.asarray(state.observation_tensor(), np.float32)
        if self.name == "c4:7x6":  # planes: player 0's stones, player 1's, empty
            obs = obs.reshape(3, 6, 7)
            p = state.current_player()
            return np.ascontiguousarray(obs[[p, 1 - p]])
        return obs.reshape(self.planes, self.height, self.width)


class TorchEvaluator(mcts.Evaluator):
    """AlphaZeroEvaluator's shape (LRU cache, prior + evaluate share one inference), torch net."""

    def __init__(self, game, model):
        self.game, self.model = game, model
        self.cache = lru_cache.LRUCache(CACHE_SIZE)
        self.inferences = 0

    def _inference(self, state):
        planes = self.game.to_planes(state)
        mask = np.asarray(state.legal_actions_mask(), np.int8)
        return self.cache.make(planes.tobytes() + mask.tobytes(), lambda: self._run(planes, state))

    def _run(self, planes, state):
        self.inferences += 1
        logits, value = torchnet.infer(self.model, planes)
        return value, torchnet.legal_softmax(logits, state.legal_actions())

    def evaluate(self, state):
        value, _ = self._inference(state)
        return np.array([value, -value]) if state.current_player() == 0 else np.array([-value, value])

    def prior(self, state):
        if state.is_chance_node():
            return state.chance_outcomes()
        _, policy = self._inference(state)
        return list(policy.items())


def make_bot(game, evaluator, simulations, seed):
    return mcts.MCTSBot(game.game, common.C_PUCT, simulations, evaluator, solve=False,
                        random_state=np.random.RandomState(seed),
                        child_selection_fn=mcts.SearchNode.puct_value,
                        dirichlet_noise=(common.DIRICHLET_EPS, common.DIRICHLET_ALPHA),
                        dont_return_chance_node=True)


def resolve_chance(state, rng):
    while state.is_chance_node():
        actions, probs = zip(*state.chance_outcomes())
        state.apply_action(int(rng.choice(actions, p=probs)))


def search_move(bot, state, rng, simulations, actions):
    """One search, the visit distribution over all actions, and the sampled move."""
    root = bot.mcts_search(state)
    visits = np.zeros(actions)
    for c in root.children:
        visits[c.action] = c.explore_count
    assert visits.sum() == simulations - 1, (visits.sum(), simulations)
    pi = visits / visits.sum()
    return pi, int(rng.choice(actions, p=pi))


def rate_cell(game, model, args):
    evaluator = TorchEvaluator(game, model)
    bot = make_bot(game, evaluator, args.simulations, common.SEED)
    rng = np.random.RandomState(common.SEED)
    holder = {"state": game.game.new_initial_state(), "winners": []}

    def step():
        state = holder["state"]
        resolve_chance(state, rng)
        before = evaluator.inferences
        _, action = search_move(bot, state, rng, args.simulations, game.actions)
        state.apply_action(action)
        if state.is_terminal():
            holder["winners"].append(state.returns()[0])
            holder["state"] = game.game.new_initial_state()
        return 1, evaluator.inferences - before

    t0 = time.perf_counter()
    step()  # warm-up: torch's first calls
    warm = time.perf_counter() - t0
    common.wait_for_go(args)
    hits0 = evaluator.cache.info().hits
    rec = common.timed(step, args.seconds)
    rec["cache_hits"] = evaluator.cache.info().hits - hits0
    rec["compile_s"] = round(warm, 2)
    rec["games_finished"] = len(holder["winners"])
    return rec


def play_game_fn(game, model, simulations):
    def play_game(seed):
        evaluator = TorchEvaluator(game, model)
        bot = make_bot(game, evaluator, simulations, seed)
        rng = np.random.RandomState(seed)
        state = game.game.new_initial_state()
        plies = []
        while not state.is_terminal():
            resolve_chance(state, rng)
            pi, action = search_move(bot, state, rng, simulations, game.actions)
            plies.append((game.to_planes(state), pi, state.current_player()))
            state.apply_action(action)
        r = state.returns()
        winner = None if r[0] == r[1] else (0 if r[0] > r[1] else 1)
        return torchnet.outcome_targets(plies, winner)
    return play_game


NOTES = ("MCTSBot as alpha_zero sets it up (solve=False, puct_value, uct_c 1), evaluator with "
         "AlphaZeroEvaluator's LRU cache (2**16); evals = net inferences (cache misses); root "
         "children visits sum to simulations - 1 (the root's evaluation is a simulation); "
         "unvisited Q 0; OpenSpiel 2.0.2's AlphaZero models are JAX (flax), the torch net is ours")


def main():
    args = common.cell_args()
    torch.set_num_threads(1)
    game = Game(args.game)
    rec = common.base_record("openspiel", "open_spiel %s, torch %s" % (
        common.version("open_spiel"), torch.__version__), args,
        common.C4_PARAMS[args.net] if args.game == "c4:7x6" else None)
    rec["notes"] = NOTES
    if args.search == "gumbel":
        rec["unsupported"] = "none: OpenSpiel has no Gumbel search"
        return common.emit(rec)
    if args.threads == 2 and not args.iteration and not args.sync:
        return common.two_process_cell(__file__, lambda _: "1 game each")
    expected = common.C4_PARAMS[args.net] if args.game == "c4:7x6" else None
    model = torchnet.make_net(args.net, game.planes, game.height, game.width, game.actions,
                              expected)
    rec["params"] = torchnet.count_params(model)
    if args.game != "c4:7x6":
        rec["observation"] = "observation_tensor [300] as 12 planes of 5x5; %d actions" % game.actions
    if args.iteration:
        rec.update(torchnet.iteration(play_game_fn(game, model, args.simulations), model, args))
        return common.emit(rec)
    rec.update(rate_cell(game, model, args))
    rec["parallelism"] = "1 game at a time, 1 process, torch 1 thread"
    common.emit(rec)


if __name__ == "__main__":
    main()
