"""Games in OpenSpiel's shape: they step like `tabula play`'s pinned transcripts
(tests/data/play), every family loads and plays, errors carry the CLI's message."""

import json
import random

import numpy as np
import pytest

import tabula
from conftest import cli_json, run_cli

# `tabula play VARIANT --seed N --json` transcripts (random players) pinned in tests/data/play.
TRANSCRIPTS = [
    ("cdc:PPPP", 1), ("cdc:PPPP", 2), ("ewn:3x3x3", 1), ("ewn:3x3x3", 3),
    ("c4:5x4", 1), ("c4:5x4", 2), ("checkers:5x5-3", 1), ("cdc:4x8", 1),
]

# One or two variants of every family the CLI knows (`tabula games`), large Go included.
VARIANTS = [
    "cdc:PPPP", "cdc:KPPP", "cdc:4x8", "ewn:3x3x3", "ewn:5x5x6", "c4:7x6", "c4:4x4",
    "checkers:5x5-3", "checkers:7x7-6", "go:5x5", "go:13x13,komi=6.5",
]


def transcript(repo, variant, seed):
    name = f"{variant.replace(':', '-')}-s{seed}"
    events = json.loads((repo / "tests/data/play" / f"{name}-json.out").read_text())
    text_path = repo / "tests/data/play" / f"{name}.out"
    text = text_path.read_text() if text_path.exists() else None
    return events, text


@pytest.mark.parametrize("variant,seed", TRANSCRIPTS)
def test_steps_like_the_cli_transcript(repo, variant, seed):
    record, text = transcript(repo, variant, seed)
    game = tabula.load_game(variant)
    assert game.variant() == record["variant"]
    state = game.new_initial_state()
    for event in record["events"]:
        assert state.notation() == event["position"]
        assert not state.is_terminal()
        if event["kind"] == "chance":
            assert state.is_chance_node()
            assert state.current_player() == tabula.CHANCE_PLAYER_ID
            outcomes = state.chance_outcomes()
            assert event["index"] in [o for o, _ in outcomes]
            assert state.legal_actions() == [o for o, _ in outcomes]
            assert abs(sum(p for _, p in outcomes) - 1.0) < 1e-12
        else:
            assert state.current_player() == event["player"]
            assert event["index"] in state.legal_actions()
        assert state.action_to_string(event["index"]) == event["name"]
        state.apply_action(event["index"])
        if text is not None and event["kind"] == "action":
            assert str(state) in text
    assert state.is_terminal()
    assert state.current_player() == tabula.TERMINAL_PLAYER_ID
    assert state.notation() == record["final_position"]
    assert state.scores() == record["scores"]
    assert state.returns() == [2 * s - 1 for s in record["scores"]]
    assert state.move_number() == len(record["events"])


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_family_plays_serializes_and_observes(variant):
    game = tabula.load_game(variant)
    rng = random.Random(7)
    state = game.new_initial_state()
    shape = game.observation_tensor_shape()
    plies = 0
    while not state.is_terminal() and plies < 400:
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            action = rng.choices(outcomes, probs)[0]
        else:
            obs = state.observation_tensor()
            assert obs.dtype == np.float32 and obs.shape == shape
            mask = state.legal_actions_mask()
            assert mask.shape == (game.num_distinct_actions(),)
            assert list(np.flatnonzero(mask)) == state.legal_actions()
            action = rng.choice(state.legal_actions())
        before = state.clone()
        state.apply_action(action)
        assert before.move_number() + 1 == state.move_number()
        plies += 1
    copy = game.deserialize_state(state.serialize())
    assert copy.serialize() == state.serialize()
    assert copy.notation() == state.notation() and str(copy) == str(state)
    assert tabula.State.deserialize(state.serialize()).history() == state.history()


def test_observation_is_the_engines_encoder():
    # Connect Four's input: the mover's stones, then the opponent's (docs/network.md).
    game = tabula.load_game("c4:7x6")
    state = game.new_initial_state()
    for col in [3, 3, 4]:
        state.apply_action(col)
    obs = state.observation_tensor()
    assert obs.shape == (2, 6, 7)
    assert obs.sum() == 3.0
    assert obs[1].sum() == 2.0 and obs[0].sum() == 1.0


@pytest.mark.parametrize("variant", ["ewn:3x3x3", "cdc:PPPP", "c4:5x4", "checkers:5x5-1"])
def test_observation_equals_tabula_encode(tabula_bin, variant):
    # `tabula encode VARIANT POSITION --json` prints the planes observation_tensor() gives.
    game = tabula.load_game(variant)
    rng = random.Random(3)
    state = game.new_initial_state()
    checked = 0
    while not state.is_terminal() and checked < 3:
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            state.apply_action(rng.choices(outcomes, probs)[0])
            continue
        cli = cli_json(tabula_bin, "encode", variant, state.notation())
        obs = state.observation_tensor()
        assert cli["shape"] == list(obs.shape)
        assert np.array_equal(np.array(cli["values"], dtype=np.float32).reshape(obs.shape), obs)
        checked += 1
        state.apply_action(rng.choice(state.legal_actions()))
    assert checked == 3


def test_bad_variant_and_illegal_action_carry_the_cli_message(tabula_bin):
    for bad in ["chess:8x8", "ewn:9x9x9", "c4:7x6,foo=1"]:
        with pytest.raises(ValueError) as err:
            tabula.load_game(bad)
        _, stderr = run_cli(tabula_bin, "play", bad, ok=False)
        assert str(err.value) in stderr, (str(err.value), stderr)
    state = tabula.load_game("c4:7x6").new_initial_state()
    with pytest.raises(ValueError, match=r"illegal action 9 in c4:7x6 .*legal: 0, 1, 2, 3, 4, 5, 6"):
        state.apply_action(9)
    with pytest.raises(ValueError, match="illegal action -1"):
        state.apply_action(-1)
    with pytest.raises(ValueError, match="not of c4:7x6"):
        tabula.load_game("c4:7x6").deserialize_state("ewn:3x3x3\n")
    with pytest.raises(ValueError, match="not an action number"):
        tabula.deserialize_state("c4:7x6\n3 x")
    ewn = tabula.load_game("ewn:3x3x3").new_initial_state()
    with pytest.raises(ValueError, match="decision states"):
        ewn.observation_tensor()
