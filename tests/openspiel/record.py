#!/usr/bin/env python3
"""Record random-play transcripts of OpenSpiel games for tabula's cross-check tests.

Run from the repository root (needs network access to PyPI once, for the venv):

    python3 -m venv .venv-openspiel && \
    .venv-openspiel/bin/pip install open_spiel numpy absl-py attrs && \
    .venv-openspiel/bin/python tests/openspiel/record.py

(`.venv-openspiel/bin/pip install -r tests/openspiel/requirements.txt` installs the exact
versions the committed transcripts were made with.)

It writes tests/data/openspiel/{banqi,einstein_wurfelt_nicht,connect_four,go_5x5,go_7x7,
go_9x9}.jsonl, replacing them. Nothing else is created or changed. The run is deterministic: every game is played
with its own `random.Random(seed)` (seed = "<game>:<index>"), actions are drawn uniformly
from OpenSpiel's legal list by index and chance outcomes by exact integer weights (OpenSpiel's
probabilities are count/total fractions; the script asserts that they are), so the same
OpenSpiel version gives byte-identical files. `--check` re-records in memory and compares
with the committed files instead of writing.

The transcript format and OpenSpiel's conventions for each game are in
tests/openspiel/README.md. Only this script needs OpenSpiel; the Rust tests only read the
.jsonl files.
"""

import argparse
import json
import os
import random
import sys
from fractions import Fraction

import pyspiel

FORMAT = 1
OUT_DIR = os.path.join("tests", "data", "openspiel")

# file name -> (OpenSpiel parameters, number of games, number of leading games whose decision
# lines carry the strings of every legal action, legal sets as deltas (see README)). The file
# name is the OpenSpiel game's name, or for Go `go_<N>x<N>` (game `go`, see GAME_OF).
GAMES = {
    "banqi": ({"max_no_progress": 50}, 300, 3, True),
    "einstein_wurfelt_nicht": ({}, 300, 100, False),
    "connect_four": ({}, 300, 50, False),
    "go_5x5": ({"board_size": 5, "komi": 7.5}, 100, 2, True),
    "go_7x7": ({"board_size": 7, "komi": 7.5}, 60, 2, True),
    "go_9x9": ({"board_size": 9, "komi": 7.5}, 40, 2, True),
}

# The OpenSpiel game a file records, where it is not the file's name.
GAME_OF = {"go_5x5": "go", "go_7x7": "go", "go_9x9": "go"}

# Go: snapshot str(state) every this many decision points, besides the end.
GO_SNAPSHOT_EVERY = 25
# Go: after the random games, also record this many uniform games that end drawn on a repeated
# board (superko; with komi 7.5 nothing else draws), from the seeds "<file>:superko:<j>",
# j = 0, 1, ..., keeping the first ones that end so (about 1 game in 140 on 5x5).
GO_SUPERKO_GAMES = {"go_5x5": 4, "go_7x7": 2, "go_9x9": 1}

# Banqi: after the random games, also record this many games that end with the side to move
# having pieces but no legal action (about 1 random game in 1000), from the seeds
# "banqi:stalemate:<j>", j = 0, 1, ..., keeping the first ones that end so.
BANQI_STALEMATE_GAMES = 4
# ... and this many games, played by the policy `captures_first`, that reach a decision point
# where the side to move has no piece left at all but may still flip (OpenSpiel plays on; the
# spec would end the game), from the seeds "banqi:wipeout:<j>".
BANQI_WIPEOUT_GAMES = 2

# Snapshot str(state) every this many decision points (banqi), besides the fixed ones.
BANQI_SNAPSHOT_EVERY = 50


def dumps(value):
    return json.dumps(
        value, separators=(",", ":"), ensure_ascii=True, allow_nan=False, sort_keys=True
    )


def chance_weights(state, allow_uniform):
    """OpenSpiel's chance outcomes as exact integer weights.

    Returns (weights, den): weights = n (an int: outcomes 0..n-1, each 1/n; only where
    allow_uniform, and asserted) or a list w where outcome i has probability w[i]/den (w[i] = 0:
    not an outcome), den = sum(w).
    Asserts that every OpenSpiel probability is exactly that fraction (as a double).
    """
    outcomes = state.chance_outcomes()
    ids = [o for o, _ in outcomes]
    probs = [p for _, p in outcomes]
    fracs = [Fraction(p).limit_denominator(10_000) for p in probs]
    for f, p in zip(fracs, probs):
        assert f.numerator / f.denominator == p, (f, p)
    assert sum(fracs) == 1, fracs
    den = 1
    for f in fracs:
        den = den * f.denominator // _gcd(den, f.denominator)
    nums = [f.numerator * (den // f.denominator) for f in fracs]
    for num, p in zip(nums, probs):
        assert num / den == p, (num, den, p)
    if allow_uniform:
        assert ids == list(range(len(ids))) and len(set(nums)) == 1, "not uniform"
        return len(ids), len(ids)
    w = [0] * (max(ids) + 1)
    for o, num in zip(ids, nums):
        assert o >= 0 and w[o] == 0
        w[o] = num
    return w, den


def _gcd(a, b):
    while b:
        a, b = b, a % b
    return a


def sample_weighted(rng, weights, den):
    """Draws an outcome id with probability weights[id]/den (weights may be an int n)."""
    r = rng.randrange(den)
    if isinstance(weights, int):
        return r
    for o, w in enumerate(weights):
        if r < w:
            return o
        r -= w
    raise AssertionError("weights do not sum to den")


def snapshot_due(name, state, decisions, after_chance, chance_count):
    if name == "einstein_wurfelt_nicht":
        # After the two placement events (where OpenSpiel put the cubes).
        return after_chance and chance_count <= 2
    if name == "banqi":
        # After the first flip (colours are assigned), then periodically.
        if after_chance:
            return chance_count == 1
        return decisions % BANQI_SNAPSHOT_EVERY == 0
    if name.startswith("go_"):
        return decisions % GO_SNAPSHOT_EVERY == 0
    return False


def captures_first(state, player, legal, rng):
    """Banqi policy for the selected 'wipeout' games: a capture if any, else a move, else a flip
    (uniform within the class)."""
    caps = [a for a in legal if a >= 32 and "x" in state.action_to_string(player, a)]
    moves = [a for a in legal if a >= 32]
    pool = caps or moves or legal
    return pool[rng.randrange(len(pool))]


def banqi_mover_has_nothing(state, revealed):
    """True at a banqi decision point where the side to move has no piece left, neither face up
    nor face down (revealed[c] = pieces of colour c flipped so far; 16 per colour)."""
    lines = str(state).split("\n")
    if "(P0=" not in lines[4]:
        return False
    mover_red = (state.current_player() == 0) == ("(P0=Red)" in lines[4])
    board = "".join(lines[:4])
    on_board = sum(1 for ch in board if ch.isalpha() and (ch.isupper() if mover_red else ch.islower()))
    return on_board + 16 - revealed[0 if mover_red else 1] == 0


def record_game(name, game, index, seed, full_strings, delta, policy="uniform"):
    rng = random.Random(seed)
    state = game.new_initial_state()
    lines = [dumps(["game", index, seed, policy])]
    revealed = [0, 0]  # banqi: pieces of each colour flipped so far
    nothing_left = False  # banqi: a decision point where the mover had no piece at all
    decisions = 0
    chances = 0
    previous = {0: [], 1: []}  # each player's previous legal set (delta encoding)
    while not state.is_terminal():
        if state.is_chance_node():
            weights, den = chance_weights(state, name == "einstein_wurfelt_nicht")
            o = sample_weighted(rng, weights, den)
            num = 1 if isinstance(weights, int) else weights[o]
            o_str = state.action_to_string(pyspiel.PlayerId.CHANCE, o)
            if name == "banqi":
                revealed[o // 7] += 1
            lines.append(dumps(["c", o, num, den, weights, o_str]))
            state.apply_action(o)
            chances += 1
            if snapshot_due(name, state, decisions, True, chances):
                lines.append(dumps(["s", str(state)]))
            continue
        player = state.current_player()
        legal = list(state.legal_actions())
        assert legal, "decision point with no legal action"
        if policy == "uniform":
            a = legal[rng.randrange(len(legal))]
        else:
            assert policy == "captures-first"
            a = captures_first(state, player, legal, rng)
        if name == "banqi" and banqi_mover_has_nothing(state, revealed):
            nothing_left = True
        if delta:
            before = set(previous[player])
            now = set(legal)
            assert len(now) == len(legal), "duplicate legal actions"
            encoded = [sorted(now - before), sorted(before - now)]
            previous[player] = legal
        else:
            encoded = legal
        line = ["d", player, a, encoded]
        if index < full_strings:
            line.append([state.action_to_string(player, x) for x in legal])
        lines.append(dumps(line))
        state.apply_action(a)
        decisions += 1
        if not state.is_terminal() and snapshot_due(name, state, decisions, False, chances):
            lines.append(dumps(["s", str(state)]))
    lines.append(dumps(["s", str(state)]))
    lines.append(dumps(["end", list(state.returns()), decisions]))
    return lines, state, nothing_left


def banqi_stalemate(state):
    """True if the banqi game ended because the side to move, with pieces left, had no action.

    At such an end nothing is face down (a flip would be an action), so the loser's pieces are
    exactly its letters on the final board (upper case red, lower case black).
    """
    if state.returns()[0] == 0:
        return False
    lines = str(state).split("\n")
    loser = int(lines[4].split()[1])
    p0_red = "(P0=Red)" in lines[4]
    loser_red = (loser == 0) == p0_red
    board = "".join(lines[:4])
    assert "?" not in board
    return any(ch.isupper() if loser_red else ch.islower() for ch in board if ch.isalpha())


def record(name):
    params, num_games, full_strings, delta = GAMES[name]
    game = pyspiel.load_game(GAME_OF.get(name, name), params)
    meta = {
        "format": FORMAT,
        "game": GAME_OF.get(name, name),
        "params": game.get_parameters(),
        "open_spiel": _open_spiel_version(),
        "games": num_games,
        "num_distinct_actions": game.num_distinct_actions(),
        "legal_strings_games": full_strings,
        "legal_encoding": "delta" if delta else "list",
        "policy": "uniform over legal_actions() by index; chance by exact weights",
    }
    body = []
    for i in range(num_games):
        game_lines, _, nothing_left = record_game(name, game, i, f"{name}:{i}", full_strings, delta)
        assert not nothing_left, "a random game reached the wipeout case: rethink the selection"
        body.extend(game_lines)
    selected = 0
    if name == "banqi":
        j = 0
        while selected < BANQI_STALEMATE_GAMES:
            index = num_games + selected
            seed = f"banqi:stalemate:{j}"
            game_lines, final, _ = record_game(name, game, index, seed, full_strings, delta)
            if banqi_stalemate(final):
                body.extend(game_lines)
                selected += 1
            j += 1
        j = 0
        while selected < BANQI_STALEMATE_GAMES + BANQI_WIPEOUT_GAMES:
            index = num_games + selected
            seed = f"banqi:wipeout:{j}"
            game_lines, _, nothing_left = record_game(
                name, game, index, seed, full_strings, delta, "captures-first"
            )
            if nothing_left:
                body.extend(game_lines)
                selected += 1
            j += 1
        meta["selected_games"] = selected
        meta["selected_games_are"] = (
            f"{BANQI_STALEMATE_GAMES} uniform games with seeds banqi:stalemate:<j> that end with "
            "the side to move having pieces but no legal action, then "
            f"{BANQI_WIPEOUT_GAMES} captures-first games with seeds banqi:wipeout:<j> that reach "
            "a decision point where the side to move has no piece left (face up or down) but "
            "can flip; in each case the first such seeds in j order"
        )
    if name in GO_SUPERKO_GAMES:
        j = 0
        while selected < GO_SUPERKO_GAMES[name]:
            index = num_games + selected
            seed = f"{name}:superko:{j}"
            game_lines, final, _ = record_game(name, game, index, seed, full_strings, delta)
            if final.returns()[0] == 0:
                body.extend(game_lines)
                selected += 1
            j += 1
        meta["selected_games"] = selected
        meta["selected_games_are"] = (
            f"uniform games with seeds {name}:superko:<j> that end drawn on a repeated board "
            "(superko), the first such seeds in j order"
        )
    meta["games"] = num_games + selected
    meta["random_games"] = num_games
    lines = [dumps(["meta", meta])] + body
    return "\n".join(lines) + "\n"


def _open_spiel_version():
    try:
        from importlib.metadata import version

        return version("open_spiel")
    except Exception:  # pragma: no cover - metadata missing
        return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the files, write nothing")
    ap.add_argument("games", nargs="*", default=list(GAMES), help="subset of " + ", ".join(GAMES))
    args = ap.parse_args()
    if not os.path.isfile("Cargo.toml"):
        sys.exit("run this from the repository root")
    bad = 0
    for name in args.games:
        if name not in GAMES:
            sys.exit(f"unknown game {name!r}; known: {', '.join(GAMES)}")
        text = record(name)
        path = os.path.join(OUT_DIR, name + ".jsonl")
        if args.check:
            with open(path, encoding="ascii") as f:
                same = f.read() == text
            print(f"{path}: {'identical' if same else 'DIFFERENT'}")
            bad += not same
        else:
            os.makedirs(OUT_DIR, exist_ok=True)
            with open(path, "w", encoding="ascii", newline="\n") as f:
                f.write(text)
            print(f"{path}: {len(text.encode())} bytes")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
