"""Random playouts a second from Python: tabula's state API beside OpenSpiel's (pyspiel), on
the same games in one run (docs/python.md, "Speed").

    python benches/python_playouts.py [SECONDS_PER_CELL]

Needs `tabula` (the package, python/) and, for the OpenSpiel column, `pyspiel` (PyPI's
open_spiel) importable. Each cell plays complete games from the start for about the given
seconds (default 3): every decision uniform over legal_actions(), every chance node drawn by
chance_outcomes()'s probabilities, with Python's `random` in both libraries, so the loop's
Python overhead is the same; the two libraries alternate in rounds. `play_random(n)` is
tabula's batch entry point (the loop in Rust). Prints one table.
"""

import platform
import random
import sys
import time

import tabula

try:
    import pyspiel
except ImportError:
    pyspiel = None

GAMES = [("c4:7x6", "connect_four"), ("ewn:5x5x6", "einstein_wurfelt_nicht")]


def playout(state, rng):
    """One game from `state` to its end through the OpenSpiel-shaped API; returns plies."""
    plies = 0
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            state.apply_action(rng.choices(outcomes, probs)[0])
        else:
            state.apply_action(rng.choice(state.legal_actions()))
            plies += 1
    return plies


def rate(new_state, seconds, rng):
    """Games a second and mean plies a game over about `seconds`."""
    games = plies = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        plies += playout(new_state(), rng)
        games += 1
    elapsed = time.perf_counter() - start
    return games / elapsed, plies / games


def batch_rate(game, seconds):
    state = game.new_initial_state()
    n, games, start = 1000, 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        state.play_random(n, seed=games)
        games += n
    return games / (time.perf_counter() - start)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    rng = random.Random(1)
    print(f"python {platform.python_version()}, pyspiel {'yes' if pyspiel else 'missing'}, {seconds} s a cell")
    print(f"| game | tabula games/s | pyspiel games/s | tabula / pyspiel | tabula play_random(n) games/s | plies (tabula, pyspiel) |")
    print("|---|---|---|---|---|---|")
    for ours, theirs in GAMES:
        game = tabula.load_game(ours)
        t_rates, s_rates = [], []
        for _ in range(2):
            t_rates.append(rate(game.new_initial_state, seconds / 2, rng))
            if pyspiel:
                sgame = pyspiel.load_game(theirs)
                s_rates.append(rate(sgame.new_initial_state, seconds / 2, rng))
        t = sum(r for r, _ in t_rates) / len(t_rates)
        t_plies = t_rates[-1][1]
        s = sum(r for r, _ in s_rates) / len(s_rates) if s_rates else float("nan")
        s_plies = s_rates[-1][1] if s_rates else float("nan")
        b = batch_rate(game, seconds)
        print(f"| {ours} / {theirs} | {t:.0f} | {s:.0f} | {t / s:.2f}x | {b:.0f} | {t_plies:.1f}, {s_plies:.1f} |")


if __name__ == "__main__":
    main()
