//! Exact scores of single Connect Four positions on boards too large to enumerate (7x6).
//!
//! Design in `docs/solver.md` ("Connect Four 7x6"), after Pascal Pons' public solver and its
//! write-up: negamax with alpha-beta pruning over two bitboards, a transposition table of
//! score bounds, moves ordered by the threats they create (centre first among equals), losing
//! moves pruned before they are searched, and the score found by a sequence of null-window
//! searches that narrow the window (a binary search on the score, biased towards 0).
//!
//! # Scores
//! The convention of the published test positions: 0 a draw; otherwise 22 minus the number of
//! stones the winner will have played on 7x6 (in general `(W*H + 2)/2` minus them), positive
//! when the side to move wins. A faster win scores higher, a slower loss less negative.
//!
//! # Bitboards
//! The game's own layout (`crate::games::connect4`): column c at bits `c*(H+1)..`, one empty
//! sentinel bit on top of each column; `current` holds the side to move's stones, `mask`
//! all stones, and the key `current + mask` identifies the position. The table keeps 32 bits
//! of the key at slot `key mod size` with `size` a prime above 2^32 / 2^(bits - 32): the slot
//! and the stored bits together determine a key of up to `32 + log2(size)` bits (Chinese
//! remainder theorem), so an entry never answers for another position. Boards whose keys need
//! more bits than that are refused.
//!
//! A search's answer is exact whatever the table holds (it only stores proven bounds), so one
//! solver can be reused across positions; the node count depends on what it holds.

use std::cell::RefCell;

use crate::game::{Action, Game};
use crate::games::ConnectFour;
use crate::games::connect4::C4State;

/// Bits of the table's size (a prime just above 2^this).
pub const DEFAULT_TABLE_BITS: u32 = 24;

/// A position as the search sees it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Position {
    /// Stones of the side to move.
    current: u64,
    /// All stones.
    mask: u64,
    /// Stones played.
    moves: i32,
}

/// Move ordering: up to 16 candidates kept sorted by score; the best comes out first, and
/// among equal scores the one added last (candidates are added from the edge columns in, so
/// the centre wins ties).
struct MoveSorter {
    size: usize,
    moves: [u64; 16],
    scores: [u32; 16],
}

impl MoveSorter {
    #[inline]
    fn new() -> MoveSorter {
        MoveSorter {
            size: 0,
            moves: [0; 16],
            scores: [0; 16],
        }
    }

    #[inline]
    fn add(&mut self, mv: u64, score: u32) {
        let mut pos = self.size;
        self.size += 1;
        while pos > 0 && self.scores[pos - 1] > score {
            self.moves[pos] = self.moves[pos - 1];
            self.scores[pos] = self.scores[pos - 1];
            pos -= 1;
        }
        self.moves[pos] = mv;
        self.scores[pos] = score;
    }

    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.size == 0 {
            return None;
        }
        self.size -= 1;
        Some(self.moves[self.size])
    }
}

/// Errors of the Connect Four search.
#[derive(Debug, thiserror::Error)]
pub enum C4SolveError {
    #[error(
        "c4:{w}x{h} needs {bits}-bit keys; the exact search takes boards with W*(H+1) <= {most}"
    )]
    BoardTooLarge {
        w: usize,
        h: usize,
        bits: usize,
        most: usize,
    },
}

/// The exact solver of one board size, with its transposition table.
pub struct C4Solver {
    w: usize,
    h: usize,
    bottom: u64,
    board: u64,
    /// Column masks, and the columns in search order (centre first).
    columns: Vec<u64>,
    order: Vec<usize>,
    min_score: i32,
    max_score: i32,
    keys: Vec<u32>,
    values: Vec<u8>,
    /// floor(2^64 / table size), for the slot's remainder without a division.
    reciprocal: u64,
    nodes: u64,
}

fn is_prime(n: u64) -> bool {
    n >= 2
        && (2..)
            .take_while(|d| d * d <= n)
            .all(|d| !n.is_multiple_of(d))
}

impl C4Solver {
    /// A solver for `game`'s board with a table of about 2^`table_bits` entries (5 bytes
    /// each).
    pub fn new(game: &ConnectFour, table_bits: u32) -> Result<C4Solver, C4SolveError> {
        let (w, h) = (game.width(), game.height());
        let bits = w * (h + 1);
        let table_bits = table_bits.clamp(10, 30);
        if bits > 32 + table_bits as usize {
            return Err(C4SolveError::BoardTooLarge {
                w,
                h,
                bits,
                most: 32 + table_bits as usize,
            });
        }
        let mut size = (1u64 << table_bits) + 1;
        while !is_prime(size) {
            size += 1;
        }
        let mut bottom = 0u64;
        let mut columns = Vec::with_capacity(w);
        for c in 0..w {
            bottom |= 1u64 << (c * (h + 1));
            columns.push(((1u64 << h) - 1) << (c * (h + 1)));
        }
        // Centre first, then alternating outwards, left before right.
        let mut order: Vec<usize> = (0..w).collect();
        order.sort_by_key(|&c| ((2 * c as i64 - (w as i64 - 1)).abs(), c));
        let cells = (w * h) as i32;
        Ok(C4Solver {
            w,
            h,
            bottom,
            board: bottom * ((1u64 << h) - 1),
            columns,
            order,
            min_score: -cells / 2 + 3,
            max_score: (cells + 1) / 2 - 3,
            keys: vec![0; size as usize],
            values: vec![0; size as usize],
            reciprocal: u64::MAX / size,
            nodes: 0,
        })
    }

    /// Nodes searched since the solver was made.
    pub fn nodes(&self) -> u64 {
        self.nodes
    }

    fn cells(&self) -> i32 {
        (self.w * self.h) as i32
    }

    /// The search position of a game key (`current + mask`, see the game's module docs).
    fn position_of_key(&self, key: u64) -> Position {
        let full = (1u64 << (self.h + 1)) - 1;
        let (mut current, mut mask) = (0u64, 0u64);
        for c in 0..self.w {
            let shift = c * (self.h + 1);
            let part = key >> shift & full;
            let height = 63 - (part + 1).leading_zeros();
            let m = (1u64 << height) - 1;
            mask |= m << shift;
            current |= (part - m) << shift;
        }
        Position {
            current,
            mask,
            moves: mask.count_ones() as i32,
        }
    }

    /// Squares where the stones `pos` would complete four (empty squares only).
    #[inline]
    fn winning_squares(&self, pos: u64, mask: u64) -> u64 {
        let h = self.h;
        // Vertical.
        let mut r = (pos << 1) & (pos << 2) & (pos << 3);
        for d in [h + 1, h, h + 2] {
            let p = (pos << d) & (pos << (2 * d));
            r |= p & (pos << (3 * d));
            r |= p & (pos >> d);
            let p = (pos >> d) & (pos >> (2 * d));
            r |= p & (pos << d);
            r |= p & (pos >> (3 * d));
        }
        r & (self.board ^ mask)
    }

    #[inline]
    fn possible(&self, p: &Position) -> u64 {
        (p.mask + self.bottom) & self.board
    }

    #[inline]
    fn can_win_next(&self, p: &Position) -> bool {
        self.winning_squares(p.current, p.mask) & self.possible(p) != 0
    }

    /// Playable squares after which the opponent cannot win at once (0 if none).
    #[inline]
    fn non_losing_moves(&self, p: &Position) -> u64 {
        let mut possible = self.possible(p);
        let threats = self.winning_squares(p.current ^ p.mask, p.mask);
        let forced = possible & threats;
        if forced != 0 {
            if forced & (forced - 1) != 0 {
                return 0; // two threats at once: lost
            }
            possible = forced;
        }
        // Never play just below an opponent's winning square.
        possible & !(threats >> 1)
    }

    #[inline]
    fn play(p: &Position, mv: u64) -> Position {
        Position {
            current: p.current ^ p.mask,
            mask: p.mask | mv,
            moves: p.moves + 1,
        }
    }

    /// `key mod size` by Barrett reduction: the estimated quotient is at most one short.
    #[inline]
    fn slot(&self, key: u64) -> usize {
        let size = self.keys.len() as u64;
        let q = ((key as u128 * self.reciprocal as u128) >> 64) as u64;
        let mut r = key - q * size;
        if r >= size {
            r -= size;
        }
        r as usize
    }

    fn negamax(&mut self, p: &Position, mut alpha: i32, mut beta: i32) -> i32 {
        self.nodes += 1;
        let cells = self.cells();
        let next = self.non_losing_moves(p);
        if next == 0 {
            return -(cells - p.moves) / 2;
        }
        if p.moves >= cells - 2 {
            return 0;
        }
        let min = -(cells - 2 - p.moves) / 2;
        if alpha < min {
            alpha = min;
            if alpha >= beta {
                return alpha;
            }
        }
        let mut max = (cells - 1 - p.moves) / 2;
        let key = p.current + p.mask;
        let slot = self.slot(key);
        if self.keys[slot] == key as u32 {
            let v = self.values[slot] as i32;
            if v > 0 {
                if v > self.max_score - self.min_score + 1 {
                    let lower = v + 2 * self.min_score - self.max_score - 2;
                    if alpha < lower {
                        alpha = lower;
                        if alpha >= beta {
                            return alpha;
                        }
                    }
                } else {
                    max = v + self.min_score - 1;
                }
            }
        }
        if beta > max {
            beta = max;
            if alpha >= beta {
                return beta;
            }
        }
        let mut sorter = MoveSorter::new();
        for i in (0..self.w).rev() {
            let mv = next & self.columns[self.order[i]];
            if mv != 0 {
                let score = self.winning_squares(p.current | mv, p.mask).count_ones();
                sorter.add(mv, score);
            }
        }
        while let Some(mv) = sorter.next() {
            let child = Self::play(p, mv);
            let score = -self.negamax(&child, -beta, -alpha);
            if score >= beta {
                self.keys[slot] = key as u32;
                self.values[slot] = (score + self.max_score - 2 * self.min_score + 2) as u8;
                return score;
            }
            if score > alpha {
                alpha = score;
            }
        }
        self.keys[slot] = key as u32;
        self.values[slot] = (alpha - self.min_score + 1) as u8;
        alpha
    }

    /// The exact score of a position (see the module docs).
    fn solve_position(&mut self, p: &Position) -> i32 {
        self.solve_within(p, false)
    }

    /// The exact score, or with `weak` only its sign (the search's window narrowed to
    /// [-1, 1]: win, draw or loss, much cheaper on early positions).
    fn solve_within(&mut self, p: &Position, weak: bool) -> i32 {
        let cells = self.cells();
        if self.can_win_next(p) {
            let score = (cells + 1 - p.moves) / 2;
            return if weak { score.signum() } else { score };
        }
        let mut min = -(cells - p.moves) / 2;
        let mut max = (cells + 1 - p.moves) / 2;
        if weak {
            (min, max) = (min.max(-1), max.min(1));
        }
        while min < max {
            let mut med = min + (max - min) / 2;
            if med <= 0 && min / 2 < med {
                med = min / 2;
            } else if med >= 0 && max / 2 > med {
                med = max / 2;
            }
            let r = self.negamax(p, med, med + 1);
            if r <= med {
                max = r;
            } else {
                min = r;
            }
        }
        // A weak search can end on a bound beyond the window (a win proven >= 3).
        if weak { min.signum() } else { min }
    }

    /// The exact score of the non-terminal position with game key `key`, for its side to move.
    pub fn score(&mut self, key: u64) -> i32 {
        let p = self.position_of_key(key);
        self.solve_position(&p)
    }

    /// Every legal column (0-based, ascending) of the non-terminal position with game key
    /// `key`, with the sign of its exact score for the side to move (1 win, 0 draw, -1 loss):
    /// a weak solve of each child.
    pub fn move_signs(&mut self, key: u64) -> Vec<(usize, i32)> {
        self.moves_within(key, true)
    }

    /// Every legal column (0-based, ascending) of the non-terminal position with game key
    /// `key`, with its exact score for the side to move.
    pub fn move_scores(&mut self, key: u64) -> Vec<(usize, i32)> {
        self.moves_within(key, false)
    }

    fn moves_within(&mut self, key: u64, weak: bool) -> Vec<(usize, i32)> {
        let p = self.position_of_key(key);
        let cells = self.cells();
        let possible = self.possible(&p);
        let wins = self.winning_squares(p.current, p.mask);
        let mut out = Vec::new();
        for c in 0..self.w {
            let mv = possible & self.columns[c];
            if mv == 0 {
                continue;
            }
            let score = if wins & mv != 0 {
                let score = (cells + 1 - p.moves) / 2;
                if weak { score.signum() } else { score }
            } else {
                -self.solve_within(&Self::play(&p, mv), weak)
            };
            out.push((c, score));
        }
        out
    }
}

/// A score to the [-1, 1] value scale (win 1, draw 0, loss -1).
pub fn score_to_value(score: i32) -> f64 {
    f64::from(score.signum())
}

/// Whether the exact search takes `game`'s board with the default table.
pub fn searchable(game: &ConnectFour) -> bool {
    game.width() * (game.height() + 1) <= 32 + DEFAULT_TABLE_BITS as usize
}

thread_local! {
    /// One solver per thread and board, kept between calls so its table keeps helping.
    static SOLVER: RefCell<Option<((usize, usize), C4Solver)>> = const { RefCell::new(None) };
}

/// Every legal action of decision state `s` with its exact value in [-1, 1] for the mover
/// (win 1, draw 0, loss -1), ascending; `None` for a terminal state or a board the search
/// does not take. Uses this thread's solver (made on first use, 2^24 table entries).
pub fn action_values(g: &ConnectFour, s: &C4State) -> Option<Vec<(Action, f64)>> {
    if !matches!(g.turn(s), crate::game::Turn::Player(_)) {
        return None;
    }
    let dims = (g.width(), g.height());
    SOLVER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_none_or(|(d, _)| *d != dims) {
            *slot = Some((dims, C4Solver::new(g, DEFAULT_TABLE_BITS).ok()?));
        }
        let (_, solver) = slot.as_mut()?;
        Some(
            solver
                .move_scores(g.key(s))
                .into_iter()
                .map(|(c, score)| (c as Action, score_to_value(score)))
                .collect(),
        )
    })
}
