"""Cross-check of our two Connect Four implementations against pyspiel's `connect_four`.

    python c4_check.py write REF.json [--games 300]   # in the OpenSpiel venv: random games
    python c4_check.py python REF.json                # c4_python.C4Env (LightZero's env)
    python c4_check.py jax REF.json                   # mctx_bench's JAX env (mctx venv)

Each reference game is a random action sequence with, at every ply, the legal columns, and at the
end the returns (player 0 = the first mover). A check replays every game and compares the legal
columns at every ply, the ply where the game ends, and the result. Prints "N passed, 0 failed".
"""
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def write(path, games):
    import pyspiel
    game = pyspiel.load_game("connect_four")
    rng = random.Random(1)
    out, draws, tries = [], 0, 0
    # `games` random games, then random games kept only when drawn (rare) until 20 draws
    while len(out) < games or (draws < 20 and tries < 200000):
        g = random_game(game, rng)
        tries += 1
        if len(out) < games or g["returns"][0] == 0:
            out.append(g)
            draws += g["returns"][0] == 0
    with open(path, "w") as f:
        json.dump(out, f)
    print("wrote %d games (%d draws)" % (len(out), draws))


def random_game(game, rng):
    s = game.new_initial_state()
    legal, actions = [], []
    while not s.is_terminal():
        legal.append(list(s.legal_actions()))
        a = rng.choice(legal[-1])
        actions.append(a)
        s.apply_action(a)
    return {"actions": actions, "legal": legal, "returns": list(s.returns())}


def check_python(ref):
    from c4_python import C4Env
    fails = 0
    for g in ref:
        env = C4Env()
        ok = True
        for a, legal in zip(g["actions"], g["legal"]):
            ok &= (not env.done) and env.legal_actions == legal
            env.step(a)
        done, winner = env.get_done_winner()
        r0 = 0.0 if winner == -1 else (1.0 if winner == 1 else -1.0)
        ok &= done and r0 == g["returns"][0]
        fails += not ok
    return fails


def check_jax(ref):
    import jax
    import numpy as np
    import mctx_bench as mb
    step = jax.jit(mb.c4_step)
    legal_fn = jax.jit(mb.c4_legal)
    fails = 0
    for g in ref:
        s = mb.c4_init()
        ok = True
        reward = 0.0
        for a, legal in zip(g["actions"], g["legal"]):
            ok &= (not bool(s.done)) and np.flatnonzero(np.asarray(legal_fn(s))).tolist() == legal
            s, reward = step(s, a)
        # the last mover is player (len - 1) % 2; reward 1 when that move won
        last = (len(g["actions"]) - 1) % 2
        r0 = float(reward) * (1.0 if last == 0 else -1.0)
        ok &= bool(s.done) and r0 == g["returns"][0]
        fails += not ok
    return fails


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "write":
        n = int(sys.argv[sys.argv.index("--games") + 1]) if "--games" in sys.argv else 300
        return write(path, n)
    with open(path) as f:
        ref = json.load(f)
    fails = (check_python if mode == "python" else check_jax)(ref)
    print("c4 %s env vs pyspiel connect_four: %d passed, %d failed" % (mode, len(ref) - fails, fails))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
