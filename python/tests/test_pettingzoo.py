"""The PettingZoo AEC environments pass PettingZoo's own api_test on every game family, and
carry the exact value in infos where a truth exists."""

import numpy as np
import pytest

pettingzoo = pytest.importorskip("pettingzoo")
from pettingzoo.test import api_test  # noqa: E402

import tabula.pettingzoo  # noqa: E402

FAMILIES = ["cdc:PPPP", "ewn:3x3x3", "c4:4x4", "checkers:4x4-3", "go:5x5"]


@pytest.mark.parametrize("variant", FAMILIES)
def test_api_test_passes(variant):
    api_test(tabula.pettingzoo.env(variant, seed=1), num_cycles=30, verbose_progress=False)


def play(env, seed):
    """One game with uniformly random legal actions; the infos seen at each step."""
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    seen = []
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        seen.append((agent, dict(info), reward))
        if term or trunc:
            env.step(None)
            continue
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    return seen


def test_exact_values_in_infos_and_seeded_chance():
    env = tabula.pettingzoo.env("ewn:3x3x3", solve=True)
    seen = play(env, 4)
    assert seen == play(env, 4)
    for agent, info, _ in seen:
        assert 0.0 <= info["exact_value"] <= 1.0
    # Both agents' values are complementary, and the game's end scores them 1 or 0.
    env.reset(seed=2)
    a, b = (env.infos[x]["exact_value"] for x in env.possible_agents)
    assert a + b == pytest.approx(1.0, abs=1e-12)
    last = {agent: (info, reward) for agent, info, reward in seen[-2:]}
    for agent, (info, reward) in last.items():
        assert info["exact_value"] == (reward + 1) / 2
    plain = tabula.pettingzoo.env("cdc:4x8", seed=0)
    plain.reset()
    assert "exact_value" not in plain.infos["player_0"]
