"""Exact values equal `tabula value`'s: from a solution (solved here, stored, read back by
the CLI) and, on Connect Four 7x6, from the exact search; a clear error where none exists."""

import random

import pytest

import tabula
from conftest import cli_json, run_cli


def decision_states(game, seed, n):
    """Up to n decision states of one random game."""
    rng = random.Random(seed)
    state, out = game.new_initial_state(), []
    while not state.is_terminal() and len(out) < n:
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            state.apply_action(rng.choices(outcomes, probs)[0])
        else:
            out.append(state.clone())
            state.apply_action(rng.choice(state.legal_actions()))
    return out


@pytest.mark.parametrize("variant", ["ewn:3x3x3", "c4:4x4"])
def test_solved_values_equal_the_cli(tabula_bin, tmp_path, variant):
    db = str(tmp_path / "s.db")
    game = tabula.load_game(variant)
    with pytest.raises(ValueError, match="not solved in this session"):
        game.new_initial_state().exact_value(player=0)
    seen = []
    positions = game.solve(db=db, progress=lambda phase, done, total: seen.append(phase))
    assert positions > 0 and seen
    assert game.has_exact_values()
    start = game.new_initial_state()
    for state in decision_states(game, 1, 6):
        cli = cli_json(tabula_bin, "--db", db, "value", variant, state.notation())
        assert state.exact_value() == pytest.approx(cli["value"], abs=1e-12)
        mine = state.action_values()
        assert [a for a, _ in mine] == [a["action"] for a in cli["actions"]]
        for (_, v), a in zip(mine, cli["actions"]):
            assert v == pytest.approx(a["value"], abs=1e-12)
        p = state.current_player()
        assert state.exact_value(player=1 - p) == pytest.approx(1 - cli["value"], abs=1e-12)
    # A solve in memory gives the same numbers as the stored one.
    fresh = tabula.load_game(variant)
    fresh.solve()
    assert fresh.new_initial_state().exact_value(player=0) == start.exact_value(player=0)
    assert 0.0 <= start.exact_value(player=0) <= 1.0


def test_connect_four_7x6_by_the_exact_search(tabula_bin, repo):
    game = tabula.load_game("c4:7x6")
    assert game.has_exact_values()
    lines = (repo / "tests/data/connect4/Test_L3_R1").read_text().split("\n")[:3]
    for line in lines:
        moves = line.split()[0]
        state = game.new_initial_state()
        for digit in moves:
            state.apply_action(int(digit) - 1)
        cli = cli_json(tabula_bin, "value", "c4:7x6", moves)
        assert state.exact_value() == cli["value"]
        values = dict(state.action_values())
        assert sorted(values) == sorted(m["move"] - 1 for m in cli["moves"])
        for m in cli["moves"]:
            sign = (m["score"] > 0) - (m["score"] < 0)
            assert values[m["move"] - 1] == (sign + 1) / 2


def test_no_truth_is_a_clear_error(tabula_bin):
    state = tabula.load_game("cdc:4x8").new_initial_state()
    with pytest.raises(ValueError) as err:
        state.exact_value()
    _, stderr = run_cli(tabula_bin, "value", "cdc:4x8", state.notation(), ok=False)
    assert str(err.value) == "cdc:4x8 cannot be solved, so it has no exact values"
    assert str(err.value) in stderr
    with pytest.raises(ValueError, match="cannot be solved"):
        tabula.load_game("go:5x5").solve()
    ewn = tabula.load_game("ewn:3x3x3").new_initial_state()
    with pytest.raises(ValueError, match="not a decision position"):
        ewn.action_values()
    with pytest.raises(ValueError, match="player 2 does not exist"):
        ewn.exact_value(player=2)
