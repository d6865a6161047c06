"""Cross-check of mctx_ewn's EinStein wurfelt nicht against pyspiel's `einstein_wurfelt_nicht`.

    python ewn_check.py write REF.json [--games 200]   # OpenSpiel venv: random games
    python ewn_check.py jax REF.json                    # mctx venv: replay in mctx_ewn

A reference game: the two placement outcomes, then per turn the die outcome, the legal moves
and the move played; at the end the returns. The check compares the legal moves at every turn,
the turn the game ends, the result, and the observation tensor at every turn.
Prints "N passed, M failed".
"""
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def write(path, games):
    import pyspiel
    game = pyspiel.load_game("einstein_wurfelt_nicht")
    rng = random.Random(3)
    out = []
    for _ in range(games):
        s = game.new_initial_state()
        place = [rng.randrange(720), rng.randrange(720)]
        s.apply_action(place[0])
        s.apply_action(place[1])
        turns = []
        while not s.is_terminal():
            die = rng.randrange(6)
            s.apply_action(die)
            legal = list(s.legal_actions())
            obs = [i for i, x in enumerate(s.observation_tensor()) if x]
            a = rng.choice(legal)
            turns.append({"die": die, "legal": legal, "obs": obs, "action": a})
            s.apply_action(a)
        out.append({"place": place, "turns": turns, "returns": list(s.returns())})
    with open(path, "w") as f:
        json.dump(out, f)
    print("wrote %d games" % games)


def check_jax(ref):
    import jax
    import numpy as np
    import mctx_ewn as ew
    legal_fn, move_fn, obs_fn = jax.jit(ew.legal), jax.jit(ew.move), jax.jit(ew.observation)
    roll_fn = jax.jit(ew.roll)
    fails = 0
    for g in ref:
        s = ew.initial(*g["place"])
        ok = True
        for t in g["turns"]:
            ok &= not bool(s.done)
            s = roll_fn(s, t["die"])
            ok &= np.flatnonzero(np.asarray(legal_fn(s))).tolist() == t["legal"]
            ok &= np.flatnonzero(np.asarray(obs_fn(s)).reshape(-1)).tolist() == t["obs"]
            s = move_fn(s, t["action"])
        ok &= bool(s.done) and float(ew.returns0(s)) == g["returns"][0]
        fails += not ok
    return fails


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "write":
        n = int(sys.argv[sys.argv.index("--games") + 1]) if "--games" in sys.argv else 200
        return write(path, n)
    with open(path) as f:
        ref = json.load(f)
    fails = check_jax(ref)
    print("ewn jax env vs pyspiel einstein_wurfelt_nicht: %d passed, %d failed"
          % (len(ref) - fails, fails))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
