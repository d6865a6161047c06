"""Connect Four 7x6 in plain Python with the interface LightZero's AlphaZero tree
(`lzero.mcts.ptree.ptree_az.MCTS`) calls on its simulation env:

    reset(start_player_index, init_state), step(action), legal_actions (property),
    current_player (1 or 2), get_done_winner() -> (done, winner: 1, 2, or -1 for none / draw),
    action_space.n, battle_mode, battle_mode_in_simulation_env ('self_play_mode'), render_mode.

The state (`init_state`) is the board as a tuple of 42 cells (row 0 = bottom, index row*7+col;
0 empty, 1 or 2 a player's stone). `planes()` is the net's input: side to move, then opponent.
No lzero import, so the pyspiel cross-check can run it anywhere.
"""
import numpy as np

ROWS, COLS = 6, 7
LINES = ((0, 1), (1, 0), (1, 1), (1, -1))


class ActionSpace:
    n = COLS


class C4Env:
    action_space = ActionSpace()
    battle_mode = "self_play_mode"
    battle_mode_in_simulation_env = "self_play_mode"
    render_mode = None

    def __init__(self):
        self.reset()

    def reset(self, start_player_index=0, init_state=None):
        self.board = [0] * (ROWS * COLS) if init_state is None else list(init_state)
        self.heights = [sum(1 for r in range(ROWS) if self.board[r * COLS + c]) for c in range(COLS)]
        self.plies = sum(self.heights)
        self.current_player = start_player_index + 1
        self.winner = -1
        self.done = False
        self._legal = None
        return self

    @property
    def legal_actions(self):
        if self._legal is None:
            self._legal = [] if self.done else [c for c in range(COLS) if self.heights[c] < ROWS]
        return self._legal

    def step(self, action):
        row = self.heights[action]
        assert row < ROWS and not self.done, (action, self.board)
        p = self.current_player
        self.board[row * COLS + action] = p
        self.heights[action] += 1
        self.plies += 1
        if self._wins(row, action, p):
            self.done, self.winner = True, p
        elif self.plies == ROWS * COLS:
            self.done = True
        self.current_player = 3 - p
        self._legal = None

    def _wins(self, row, col, p):
        b = self.board
        for dr, dc in LINES:
            n = 1
            for sign in (1, -1):
                r, c = row + sign * dr, col + sign * dc
                while 0 <= r < ROWS and 0 <= c < COLS and b[r * COLS + c] == p:
                    n += 1
                    r, c = r + sign * dr, c + sign * dc
            if n >= 4:
                return True
        return False

    def get_done_winner(self):
        return self.done, self.winner

    def state_config(self):
        return {"start_player_index": self.current_player - 1, "init_state": tuple(self.board)}

    def planes(self):
        b = np.asarray(self.board, np.int8).reshape(ROWS, COLS)
        p = self.current_player
        return np.stack([b == p, b == 3 - p]).astype(np.float32)
