"""PettingZoo AEC environments of tabula's games: ``tabula.pettingzoo.env("c4:7x6")``.

Two agents, ``player_0`` (the first mover) and ``player_1``. Chance events (dice, piece
placements, flips' reveals) are resolved inside the environment from a seeded stream
(``numpy.random.default_rng(seed)``, reseeded by ``reset(seed=...)``), so the agents see
decisions only. An agent's observation is a dict: ``observation``, tabula's network input
(float32, channels x height x width, from the mover's view) when it is that agent's turn,
zeros otherwise, and ``action_mask`` (int8, 1 on the legal actions of the agent to move).
Rewards at the end are OpenSpiel's returns: +1 win, -1 loss, 0 draw. Where the variant has
exact values (a solution solved or loaded with ``solve=True``, or an exact search per
position: Connect Four 7x6), ``infos[agent]["exact_value"]`` is the current state's exact
value for that agent on tabula's [0, 1] scale.
"""

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

import tabula

__all__ = ["env", "TabulaEnv"]


def env(variant, seed=None, solve=False, db=None, exact_values=True, render_mode=None):
    """The AEC environment of a variant (see the module's docs); ``solve=True`` solves the
    variant first (``db``: load the solution from that store, or solve and store it)."""
    return TabulaEnv(variant, seed, solve, db, exact_values, render_mode)


class TabulaEnv(AECEnv):
    metadata = {"render_modes": ["ansi", "human"], "name": "tabula_v0", "is_parallelizable": False}

    def __init__(self, variant, seed=None, solve=False, db=None, exact_values=True, render_mode=None):
        super().__init__()
        self.game = tabula.load_game(variant)
        if solve:
            self.game.solve(db=db)
        self.exact_values = exact_values and self.game.has_exact_values()
        self.render_mode = render_mode
        self.metadata = dict(self.metadata, name=f"tabula_{self.game.variant()}")
        self.possible_agents = ["player_0", "player_1"]
        n = self.game.num_distinct_actions()
        shape = self.game.observation_tensor_shape()
        self.action_spaces = {a: spaces.Discrete(n) for a in self.possible_agents}
        self.observation_spaces = {
            a: spaces.Dict({
                "observation": spaces.Box(-np.inf, np.inf, shape=shape, dtype=np.float32),
                "action_mask": spaces.Box(0, 1, shape=(n,), dtype=np.int8),
            })
            for a in self.possible_agents
        }
        self._seed = seed
        self.state = None

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]

    def reset(self, seed=None, options=None):
        if seed is not None:
            self._seed = seed
        self._rng = np.random.default_rng(self._seed)
        self.state = self.game.new_initial_state()
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        self._resolve_chance()
        self._after_move()

    def _resolve_chance(self):
        while self.state.is_chance_node():
            outcomes, probs = zip(*self.state.chance_outcomes())
            probs = np.asarray(probs, dtype=np.float64)
            i = self._rng.choice(len(outcomes), p=probs / probs.sum())
            self.state.apply_action(outcomes[i])

    def _after_move(self):
        """Turn, rewards, terminations and infos of the state reached."""
        if self.state.is_terminal():
            for i, a in enumerate(self.possible_agents):
                self.rewards[a] = self.state.returns()[i]
            self.terminations = dict.fromkeys(self.agents, True)
        else:
            self.agent_selection = self.possible_agents[self.state.current_player()]
        for a in self.agents:
            info = {"legal_moves": self.state.legal_actions() if a == self.agent_selection else []}
            if self.exact_values:
                info["exact_value"] = self.state.exact_value(player=self.possible_agents.index(a))
            self.infos[a] = info

    def observe(self, agent):
        n = self.game.num_distinct_actions()
        mask = np.zeros(n, dtype=np.int8)
        shape = self.game.observation_tensor_shape()
        obs = np.zeros(shape, dtype=np.float32)
        if not self.state.is_terminal() and agent == self.agent_selection:
            obs = self.state.observation_tensor()
            mask[self.state.legal_actions()] = 1
        return {"observation": obs, "action_mask": mask}

    def step(self, action):
        if self.terminations[self.agent_selection] or self.truncations[self.agent_selection]:
            return self._was_dead_step(action)
        self._cumulative_rewards[self.agent_selection] = 0
        self.rewards = dict.fromkeys(self.agents, 0)
        self.state.apply_action(int(action))
        self._resolve_chance()
        self._after_move()
        self._accumulate_rewards()
        if self.render_mode == "human":
            print(self.render())

    def render(self):
        return str(self.state)

    def close(self):
        pass
