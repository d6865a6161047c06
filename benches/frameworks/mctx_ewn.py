"""EinStein wurfelt nicht 5x5x6 in JAX with OpenSpiel's rules and encodings, searched by
`mctx.stochastic_muzero_policy` with the REAL dynamics (no learned model).

Rules as OpenSpiel's `einstein_wurfelt_nicht`: 5x5 board, 6 cubes a side; black (player 0) in
the top-left triangle (r + c <= 2), white (1) in the bottom-right (r + c >= 6), each side's
placement one of the 720 permutations (a chance node, here sampled uniformly outside the
search); white moves first; before every move a die 1..6 (chance); the cube with the die's
number moves, or if it is gone the nearest lower and the nearest higher existing cubes; black
moves right, down or down-right, white left, up or up-left; a cube landing on any cube removes
it; a side wins by reaching the opposite corner or removing all the other's cubes. Actions:
OpenSpiel's ((r * 5 + c) * 6 + direction) * 2 + capture (300). Net input: OpenSpiel's
observation tensor, 12 one-hot planes (plane (value - 1) * 2 + player, transposed as OpenSpiel
writes it), no die in it.

Stochastic MuZero mapping (mctx calls the decision and the chance function at every expansion):
- decision (state, move) -> afterstate: the move applied, die unknown. The net is evaluated on the
  afterstate's board (its input has no die, so it is also the input of every state below it);
  afterstate_value = reward of the move (+1 when it wins) or -v(board) for the opponent;
  chance_logits = uniform over the 6 die faces. Its logits and value are kept in the afterstate.
- chance (afterstate, die) -> state: the die set; the kept net output gives the priors (masked to
  the legal moves for this die) and v; reward = +1 to the mover when the move won, discount 0
  after a terminal afterstate, else reward 0 and discount -1.
So one net evaluation per simulation (a terminal one included); evals = B * (simulations + 1).
"""
import itertools

import jax
import jax.numpy as jnp
import numpy as np
from typing import NamedTuple

N = 5
CELLS = N * N
ACTIONS = CELLS * 6 * 2
DR = np.array([1, 1, 0, -1, -1, 0])
DC = np.array([1, 0, 1, 0, -1, -1])
PERMS = np.array(list(itertools.permutations(range(1, 7))), np.int8)  # OpenSpiel's order


def _targets():
    """(25, 6) target square of each square and direction, and whether it is on the board."""
    tgt = np.zeros((CELLS, 6), np.int32)
    inb = np.zeros((CELLS, 6), bool)
    for s in range(CELLS):
        r, c = divmod(s, N)
        for d in range(6):
            r2, c2 = r + DR[d], c + DC[d]
            inb[s, d] = 0 <= r2 < N and 0 <= c2 < N
            tgt[s, d] = (r2 * N + c2) if inb[s, d] else 0
    return jnp.asarray(tgt), jnp.asarray(inb)


TGT, INB = _targets()
DIR_OK = jnp.asarray([[True] * 3 + [False] * 3, [False] * 3 + [True] * 3])


class EWN(NamedTuple):
    board: jnp.ndarray   # (25,) int32: 0 empty, 1..6 black cube v, 7..12 white cube v (v + 6)
    player: jnp.ndarray  # () int32 to move (0 black, 1 white)
    die: jnp.ndarray     # () int32 1..6 (0 in an afterstate)
    done: jnp.ndarray    # () bool
    won: jnp.ndarray     # () bool: the last move won (for the reward)


def initial(black_perm, white_perm):
    """Placement chance outcomes (0..719 each) -> the state before white's first die."""
    board = np.zeros(CELLS, np.int32)
    bi = wi = 0
    for r in range(N):
        for c in range(N):
            if r + c <= 2:
                board[r * N + c] = PERMS[black_perm][bi]
                bi += 1
            elif r + c >= 6:
                board[r * N + c] = PERMS[white_perm][wi] + 6
                wi += 1
    return EWN(jnp.asarray(board), jnp.int32(1), jnp.int32(0), jnp.bool_(False), jnp.bool_(False))


def movable(board, player, die):
    """(25,) bool: squares of the cubes the die lets `player` move."""
    vals = jnp.arange(1, 7)
    codes = vals + 6 * player
    present = (board[None, :] == codes[:, None]).any(-1)            # (6,)
    exact = present[die - 1]
    lower = jnp.max(jnp.where(present & (vals < die), vals, 0))
    higher = jnp.min(jnp.where(present & (vals > die), vals, 7))
    chosen = jnp.where(exact, vals == die, (vals == lower) | (vals == higher))  # (6,)
    code_chosen = jnp.where(chosen, codes, -1)
    return (board[:, None] == code_chosen[None, :]).any(-1)


def legal(s):
    """(300,) bool legal moves (none in a terminal state)."""
    sq = movable(s.board, s.player, s.die)                            # (25,)
    occupied = s.board[TGT] != 0                                      # (25, 6)
    base = sq[:, None] & DIR_OK[s.player][None, :] & INB             # (25, 6)
    cap = jnp.stack([base & ~occupied, base & occupied], -1)          # (25, 6, 2)
    return cap.reshape(-1) & ~s.done


def move(s, action):
    """Apply a move (die consumed): the afterstate, player switched, die 0."""
    sq, d = action // 12, (action // 2) % 6
    t = TGT[sq, d]
    board = s.board.at[t].set(s.board[sq]).at[sq].set(0)
    black_left = ((board >= 1) & (board <= 6)).sum()
    white_left = (board >= 7).sum()
    black_wins = ((s.player == 0) & (t == CELLS - 1)) | (white_left == 0)
    white_wins = ((s.player == 1) & (t == 0)) | (black_left == 0)
    won = jnp.where(s.player == 0, black_wins, white_wins)
    done = black_wins | white_wins
    new = EWN(board, 1 - s.player, jnp.int32(0), done, won)
    return jax.tree_util.tree_map(lambda o, n: jnp.where(s.done, o, n), s._replace(won=False), new)


def roll(s, die):
    return s._replace(die=jnp.where(s.done, 0, die + 1).astype(jnp.int32))


def observation(s):
    """OpenSpiel's tensor: plane (v - 1) * 2 + p, element [y, x] = board(row x, col y)."""
    codes = jnp.asarray([v + 6 * p for v in range(1, 7) for p in range(2)])
    planes = (s.board[None, :] == codes[:, None]).reshape(12, N, N)
    return jnp.transpose(planes, (0, 2, 1)).astype(jnp.float32)


def returns0(s):
    """Player 0's return in a terminal state reached by a move of 1 - s.player."""
    mover = 1 - s.player
    return jnp.where(s.won, jnp.where(mover == 0, 1.0, -1.0), 0.0)


_BLACK_SQ = jnp.asarray([s for s in range(CELLS) if sum(divmod(s, N)) <= 2])
_WHITE_SQ = jnp.asarray([s for s in range(CELLS) if sum(divmod(s, N)) >= 6])
_PERMS = jnp.asarray(PERMS, jnp.int32)


def initial_jax(key):
    """A new game with both placements sampled (jittable), before white's first die."""
    kb, kw = jax.random.split(key)
    bp, wp = jax.random.randint(kb, (), 0, 720), jax.random.randint(kw, (), 0, 720)
    board = jnp.zeros(CELLS, jnp.int32).at[_BLACK_SQ].set(_PERMS[bp]).at[_WHITE_SQ].set(_PERMS[wp] + 6)
    return EWN(board, jnp.int32(1), jnp.int32(0), jnp.bool_(False), jnp.bool_(False))
