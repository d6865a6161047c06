//! Two-player Chinese Checkers on an N x N diamond (docs/games.md, "Chinese Checkers").
//!
//! # Rules
//! The board is an N x N matrix (row r = 0 at the top, column c = 0 at the left) read as a
//! diamond of hexagons: the neighbours of (r, c) are (r, c-1), (r, c+1), (r-1, c), (r+1, c),
//! (r-1, c-1) and (r+1, c+1). The acute corners are (N-1, 0) and (0, N-1). With triangle
//! side t (p = t(t+1)/2 checkers a side), player 0 (`x`, [`Player::P0`]) starts on the squares
//! with (N-1-r) + c <= t-1 (bottom-left, around (N-1, 0)) and player 1 (`o`) on the squares
//! with r + (N-1-c) <= t-1 (top-right, around (0, N-1)). Each player's goal is the other's
//! start triangle. Player 0 moves first.
//!
//! A move takes one checker either one step to an empty neighbour, or through a chain of hops:
//! each hop jumps over one adjacent checker (either colour) in a straight line to the empty
//! square just beyond; the chain may stop after any hop and never revisits a square (its start
//! square included). Only the start and end squares matter, so chains that end on the same
//! square are one move, and a chain back to its start square is no move.
//!
//! After every move, in this order:
//! 1. the player who just moved wins if its win condition holds; otherwise the player to move
//!    wins if its own holds (possible only under `filled`, where the mover can fill the
//!    opponent's goal). Win conditions: `win=all-own` (default): all own checkers stand in the
//!    goal triangle; `win=filled`: the goal triangle is full (checkers of either colour) and
//!    holds at least one own checker, which defeats a player who never leaves home.
//! 2. the player to move **loses if it has no legal move** (there is no pass action: a player
//!    that is completely blocked in is beaten, as in the solver's convention for CDC). It takes
//!    many blockers (a home triangle of 6 needs 9 of them), so it arises on crowded boards;
//!    the tests build one on `5x5-10`.
//! 3. the game is drawn when `max_plies` plies have been played (move limit), or
//! 4. when at least 16 plies have been played and the last 16 moves went to fewer than 6
//!    distinct destination squares (short-cycle detector).
//!
//! Steps 1 and 2 depend on the position only, so a position rebuilt from its key or notation
//! has the same status; the ply count and the last 16 destinations are draw counters, kept in
//! the state but not in the key (and reset by [`Game::state_from_key`] and
//! [`Game::parse_notation`]).
//!
//! # Parameters
//! `checkers:NxN-p[,win=all-own|filled][,max_plies=M]`: N in 2..=8 (at most 64 squares, so
//! move generation runs on `u64` bitsets); p triangular (1, 3, 6, 10) with triangle side
//! t < N (the two start triangles never overlap; t = N-1 leaves only the main diagonal empty)
//! and p <= 10 (the key holds 2p squares of 6 bits in a `u128`); `max_plies` in 1..=10000,
//! default 200. `checkers:7x7-6` is the standard 49-slot game; `checkers:5x5-3` a reduced one.
//! The canonical name leaves out options at their defaults.
//!
//! # Actions
//! |A| = N*N*p (294 for 7x7-6). Action = N*N*(id-1) + destination, with destination the square
//! index r*N + c. Checker ids 1..p are fixed per checker for the whole game, assigned in
//! row-major order of that player's start squares. Legal actions come out ascending (by id,
//! then destination). An action's name is `from-to` in square names, e.g. `b2-b3`.
//!
//! # Key
//! A `u128`: bits 6k..6k+6 hold the square index of checker id k+1 of player 0 (k < p), bits
//! 6(p+k)..6(p+k)+6 that of checker id k+1 of player 1, bit 12p the side to move (0 = x,
//! 1 = o); all higher bits are zero. Decoding rejects squares off the board, two checkers on
//! one square and stray high bits.
//!
//! # Notation
//! Squares are named like chess squares: column letter a.. (c = 0 is `a`) then row number
//! counted from the bottom (r = N-1 is row 1), so x's corner (N-1, 0) is `a1` and o's corner
//! (0, N-1) is `g7` on 7x7. A position is `<x squares>/<o squares> <side>`: each player's
//! squares in id order, comma-separated, then `x` or `o` for the side to move, e.g. the
//! 7x7-6 start `a3,a2,b2,a1,b1,c1/e7,f7,g7,f6,g6,g5 x`.
//!
//! [`Checkers::render`] draws the diamond with x's corner at the bottom and o's at the top,
//! each checker as its colour and id (`x3`, `o1`), empty squares as `.`.

mod abilities;
mod encode;
mod index;

use std::fmt;
use std::fmt::Write as _;

use crate::error::GameError;
use crate::game::{Action, ChanceOutcome, Game, GameResult, Outcome, Player, Turn};
use crate::games::{FamilyInfo, VariantSpec};

pub(crate) const FAMILY: FamilyInfo = FamilyInfo {
    name: "checkers",
    title: "Chinese Checkers (two players)",
    syntax: "checkers:NxN-p[,win=all-own|filled][,max_plies=M]",
    parameters: &[
        ("N", "board side, 2..=8 (an N x N diamond)"),
        (
            "p",
            "checkers a side: a triangular number 1, 3, 6 or 10 whose corner triangle side is < N",
        ),
        (
            "win",
            "all-own (default: all own checkers in the goal triangle) | filled (goal triangle full, at least one own checker)",
        ),
        (
            "max_plies",
            "1..=10000, default 200: the game is drawn after this many plies",
        ),
    ],
    action_space: "N*N*p (294 for 7x7-6): N*N*(id-1) + destination square",
    examples: &[
        "checkers:7x7-6",
        "checkers:5x5-3",
        "checkers:5x5-3,win=filled",
        "checkers:7x7-6,max_plies=100",
    ],
};

/// Most checkers a side (the key holds 2p squares of 6 bits plus the side to move in 128 bits).
pub(crate) const MAX_CHECKERS: usize = 10;
/// Largest board side (N*N squares fit a `u64` bitset).
pub(crate) const MAX_SIDE: usize = 8;
/// The short-cycle detector looks at this many last plies...
pub(crate) const CYCLE_WINDOW: usize = 16;
/// ...and declares a draw when they went to fewer than this many distinct squares.
pub(crate) const CYCLE_MIN_DISTINCT: u32 = 6;
/// Default move limit.
pub(crate) const DEFAULT_MAX_PLIES: u16 = 200;
const MAX_PLIES_LIMIT: u32 = 10_000;

/// A square index r*N + c.
pub(crate) type Square = u8;

/// The six hexagonal directions (dr, dc).
const DIRS: [(i32, i32); 6] = [(0, -1), (0, 1), (-1, 0), (1, 0), (-1, -1), (1, 1)];

/// When a player has reached its goal.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum WinRule {
    /// All own checkers stand in the goal triangle.
    AllOwn,
    /// The goal triangle is full (either colour) and holds at least one own checker.
    Filled,
}

/// Two-player Chinese Checkers with its parameters and precomputed board tables.
#[derive(Clone, PartialEq, Eq)]
pub struct Checkers {
    n: usize,
    p: usize,
    win: WinRule,
    max_plies: u16,
    /// Start triangle of each player.
    start: [u64; 2],
    /// Square-index offset dr*N + dc of each direction of [`DIRS`].
    delta: [i8; 6],
    /// Squares from which one step in direction d stays on the board.
    step_from: [u64; 6],
    /// Squares from which two steps in direction d stay on the board.
    hop_from: [u64; 6],
}

impl fmt::Debug for Checkers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Checkers({})", self.variant())
    }
}

/// A state: every checker's square by player and id, the side to move, the result once the
/// game is over, and the draw counters (ply count, last 16 destinations).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CheckersState {
    pos: [[Square; MAX_CHECKERS]; 2],
    to_move: Player,
    result: Option<GameResult>,
    /// Plies played since the start (or since the counters were reset).
    plies: u16,
    /// Destination of ply i at `recent[i % 16]`.
    recent: [Square; CYCLE_WINDOW],
}

#[inline]
fn bit(sq: Square) -> u64 {
    1u64 << sq
}

fn symbol(p: Player) -> char {
    match p {
        Player::P0 => 'x',
        Player::P1 => 'o',
    }
}

impl Checkers {
    /// A game on an `n` x `n` board with `p` checkers a side.
    pub fn new(n: usize, p: usize, win: WinRule, max_plies: u16) -> Result<Checkers, GameError> {
        let name = format!("checkers:{n}x{n}-{p}");
        if !(2..=MAX_SIDE).contains(&n) {
            return Err(GameError::bad_variant(
                name,
                format!("board side {n} is out of range; allowed: 2..={MAX_SIDE}"),
            ));
        }
        let Some(t) = Self::triangle_side(n, p) else {
            return Err(GameError::bad_variant(
                name,
                format!(
                    "{p} checkers a side is not allowed on a {n}x{n} board; allowed: {} \
                     (p must be triangular, its corner triangle's side must be below {n} so \
                     the two triangles do not overlap, and p <= {MAX_CHECKERS} for the u128 key)",
                    Self::allowed_counts(n)
                        .iter()
                        .map(|c| c.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        };
        if !(1..=MAX_PLIES_LIMIT).contains(&u32::from(max_plies)) {
            return Err(GameError::bad_variant(
                name,
                format!("max_plies={max_plies} is out of range; allowed: 1..={MAX_PLIES_LIMIT}"),
            ));
        }
        let mut g = Checkers {
            n,
            p,
            win,
            max_plies,
            start: [0; 2],
            delta: [0; 6],
            step_from: [0; 6],
            hop_from: [0; 6],
        };
        let last = n - 1;
        for (d, (dr, dc)) in DIRS.into_iter().enumerate() {
            g.delta[d] = (dr * n as i32 + dc) as i8;
        }
        for r in 0..n {
            for c in 0..n {
                let sq = (r * n + c) as Square;
                if (last - r) + c < t {
                    g.start[0] |= bit(sq);
                }
                if r + (last - c) < t {
                    g.start[1] |= bit(sq);
                }
                for (d, (dr, dc)) in DIRS.into_iter().enumerate() {
                    if g.offset(r, c, dr, dc).is_some() {
                        g.step_from[d] |= bit(sq);
                    }
                    if g.offset(r, c, 2 * dr, 2 * dc).is_some() {
                        g.hop_from[d] |= bit(sq);
                    }
                }
            }
        }
        debug_assert_eq!(g.start.map(u64::count_ones), [p as u32, p as u32]);
        Ok(g)
    }

    /// Parses `NxN-p` and the options `win` and `max_plies`.
    pub(crate) fn from_spec(spec: &VariantSpec) -> Result<Checkers, GameError> {
        let mut spec = spec.clone();
        let Some((dims, count)) = spec.params.split_once('-') else {
            return Err(spec.error(format!(
                "expected NxN-p (board side and checkers a side), e.g. 7x7-6 or 5x5-3, got `{}`",
                spec.params
            )));
        };
        let dims = super::parse_dims(&spec, dims, 2, "NxN-p, e.g. 7x7-6")?;
        if dims[0] != dims[1] {
            return Err(spec.error(format!(
                "the board must be square (NxN), got {}x{}",
                dims[0], dims[1]
            )));
        }
        let Ok(p) = count.trim().parse::<usize>() else {
            return Err(spec.error(format!(
                "checkers a side `{count}` is not a number; allowed: 1, 3, 6, 10"
            )));
        };
        let win = match spec.take("win") {
            None => WinRule::AllOwn,
            Some(v) if v.eq_ignore_ascii_case("all-own") => WinRule::AllOwn,
            Some(v) if v.eq_ignore_ascii_case("filled") => WinRule::Filled,
            Some(v) => {
                return Err(spec.error(format!(
                    "option win={v} is not known; allowed: all-own (default), filled"
                )));
            }
        };
        let max_plies = spec.take_int(
            "max_plies",
            1..=MAX_PLIES_LIMIT,
            u32::from(DEFAULT_MAX_PLIES),
        )?;
        spec.finish(&["win", "max_plies"])?;
        let n = dims[0] as usize;
        // `new` checks the side and the checker count; its errors are re-worded for this text.
        Checkers::new(n, p, win, max_plies as u16).map_err(|e| match e {
            GameError::BadVariant { reason, .. } => spec.error(reason),
            other => other,
        })
    }

    /// The triangle side t of `p` = t(t+1)/2 checkers, if it is allowed on an `n` board.
    fn triangle_side(n: usize, p: usize) -> Option<usize> {
        (1..n)
            .find(|t| t * (t + 1) / 2 == p)
            .filter(|_| p <= MAX_CHECKERS)
    }

    /// The checker counts allowed on an `n` x `n` board.
    pub(crate) fn allowed_counts(n: usize) -> Vec<usize> {
        (1..n)
            .map(|t| t * (t + 1) / 2)
            .filter(|&p| p <= MAX_CHECKERS)
            .collect()
    }

    fn offset(&self, r: usize, c: usize, dr: i32, dc: i32) -> Option<Square> {
        let r = r as i32 + dr;
        let c = c as i32 + dc;
        let n = self.n as i32;
        ((0..n).contains(&r) && (0..n).contains(&c)).then(|| (r * n + c) as Square)
    }

    /// Board side N.
    pub fn side(&self) -> usize {
        self.n
    }

    /// Checkers a side p.
    pub(crate) fn checkers_per_side(&self) -> usize {
        self.p
    }

    pub fn max_plies(&self) -> u16 {
        self.max_plies
    }

    /// The square index of (r, c).
    pub fn square(&self, r: usize, c: usize) -> Square {
        debug_assert!(r < self.n && c < self.n);
        (r * self.n + c) as Square
    }

    /// (r, c) of a square index.
    pub(crate) fn coords(&self, sq: Square) -> (usize, usize) {
        (sq as usize / self.n, sq as usize % self.n)
    }

    /// The name of a square (`a1` is x's corner (N-1, 0)).
    pub(crate) fn square_name(&self, sq: Square) -> String {
        let (r, c) = self.coords(sq);
        format!("{}{}", (b'a' + c as u8) as char, self.n - r)
    }

    /// Parses a square name such as `c4`.
    pub(crate) fn parse_square(&self, text: &str) -> Option<Square> {
        let mut chars = text.chars();
        let col = chars.next()?.to_ascii_lowercase();
        let row: usize = chars.as_str().parse().ok()?;
        let c = (col as usize).checked_sub('a' as usize)?;
        if c >= self.n || row == 0 || row > self.n {
            return None;
        }
        Some(self.square(self.n - row, c))
    }

    /// The squares of `player`'s checkers, by id (index 0 is id 1).
    pub fn checkers<'a>(&self, s: &'a CheckersState, player: Player) -> &'a [Square] {
        &s.pos[player.index()][..self.p]
    }

    /// Plies played since the start (or since the draw counters were reset).
    pub fn plies(&self, s: &CheckersState) -> u16 {
        s.plies
    }

    /// The goal triangle of `player` (the other player's start triangle).
    pub(crate) fn goal_triangle(&self, player: Player) -> u64 {
        self.start[player.other().index()]
    }

    /// The (from, to) squares of action `a` for the side to move in `s`. Meant for legal
    /// actions; `a` must be below [`Game::num_actions`].
    pub(crate) fn move_squares(&self, s: &CheckersState, a: Action) -> (Square, Square) {
        let nn = self.n * self.n;
        let id = a as usize / nn;
        (s.pos[s.to_move.index()][id], (a as usize % nn) as Square)
    }

    /// The greedy forward-distance heuristic Psi of a move of `player` from `from` to `to`
    /// (docs/games.md): for player 0 with start (sr, sc) and end (er, ec),
    /// Psi = (sr - sc) - (er - ec); for player 1 the negative. Positive means forward.
    pub(crate) fn forward_gain(&self, player: Player, from: Square, to: Square) -> i32 {
        let (sr, sc) = self.coords(from);
        let (er, ec) = self.coords(to);
        let psi = (sr as i32 - sc as i32) - (er as i32 - ec as i32);
        match player {
            Player::P0 => psi,
            Player::P1 => -psi,
        }
    }

    fn occupancy(&self, pos: &[[Square; MAX_CHECKERS]; 2], player: Player) -> u64 {
        pos[player.index()][..self.p]
            .iter()
            .fold(0, |m, &sq| m | bit(sq))
    }

    /// The squares one step in direction `d` from the squares of `m` (staying on the board).
    #[inline]
    fn shift(&self, m: u64, d: usize) -> u64 {
        let m = m & self.step_from[d];
        let k = self.delta[d];
        if k >= 0 { m << k } else { m >> -k }
    }

    /// Every square the checker on `from` can move to, given all occupied squares `occ`.
    /// Allocation-free: a fixed stack and a visited bitset drive the hop chains.
    fn destinations(&self, occ: u64, from: Square) -> u64 {
        let occ = occ & !bit(from);
        let mut steps = 0;
        for d in 0..6 {
            steps |= self.shift(bit(from), d);
        }
        let mut visited = bit(from);
        // Every square is pushed at most once (when it is first visited).
        let mut stack = [0 as Square; 64];
        stack[0] = from;
        let mut len = 1;
        while len > 0 {
            len -= 1;
            let cur = stack[len];
            for d in 0..6 {
                if self.hop_from[d] & bit(cur) == 0 {
                    continue;
                }
                let over = cur.wrapping_add_signed(self.delta[d]);
                let land = over.wrapping_add_signed(self.delta[d]);
                if occ & bit(over) != 0 && (occ | visited) & bit(land) == 0 {
                    visited |= bit(land);
                    stack[len] = land;
                    len += 1;
                }
            }
        }
        ((steps & !occ) | visited) & !bit(from)
    }

    /// Whether `player` has any legal move: a step, or a first hop (a single hop never lands
    /// on its start square). Whole-board shifts, one per direction.
    fn has_move(&self, pos: &[[Square; MAX_CHECKERS]; 2], player: Player) -> bool {
        let own = self.occupancy(pos, player);
        let occ = own | self.occupancy(pos, player.other());
        (0..6).any(|d| {
            let next = self.shift(own, d);
            next & !occ != 0 || self.shift(next & occ, d) & !occ != 0
        })
    }

    fn has_won(&self, pos: &[[Square; MAX_CHECKERS]; 2], player: Player) -> bool {
        let own = self.occupancy(pos, player);
        let goal = self.goal_triangle(player);
        match self.win {
            WinRule::AllOwn => own & !goal == 0,
            WinRule::Filled => {
                let all = own | self.occupancy(pos, player.other());
                goal & !all == 0 && own & goal != 0
            }
        }
    }

    /// The result that the position alone decides (rules 1 and 2 of the module docs).
    fn position_result(
        &self,
        pos: &[[Square; MAX_CHECKERS]; 2],
        to_move: Player,
    ) -> Option<GameResult> {
        let last = to_move.other();
        if self.has_won(pos, last) {
            Some(GameResult::Win(last))
        } else if self.has_won(pos, to_move) {
            Some(GameResult::Win(to_move))
        } else if !self.has_move(pos, to_move) {
            Some(GameResult::Win(last))
        } else {
            None
        }
    }

    /// A state of a position with fresh draw counters.
    fn fresh_state(&self, pos: [[Square; MAX_CHECKERS]; 2], to_move: Player) -> CheckersState {
        CheckersState {
            pos,
            to_move,
            result: self.position_result(&pos, to_move),
            plies: 0,
            recent: [0; CYCLE_WINDOW],
        }
    }

    /// Checks that the first p squares of each player are on the board and distinct.
    fn check_placement(&self, pos: &[[Square; MAX_CHECKERS]; 2]) -> Result<(), String> {
        let nn = self.n * self.n;
        let mut occ = 0u64;
        for player in Player::BOTH {
            for (i, &sq) in pos[player.index()][..self.p].iter().enumerate() {
                if sq as usize >= nn {
                    return Err(format!(
                        "checker {}{} is on square index {sq}, off the {}x{} board (0..{nn})",
                        symbol(player),
                        i + 1,
                        self.n,
                        self.n
                    ));
                }
                if occ & bit(sq) != 0 {
                    return Err(format!(
                        "two checkers on square {} ({})",
                        self.square_name(sq),
                        sq
                    ));
                }
                occ |= bit(sq);
            }
        }
        Ok(())
    }
}

impl Game for Checkers {
    type State = CheckersState;
    type Key = u128;

    fn variant(&self) -> String {
        let mut v = format!("checkers:{}x{}-{}", self.n, self.n, self.p);
        if self.win == WinRule::Filled {
            v.push_str(",win=filled");
        }
        if self.max_plies != DEFAULT_MAX_PLIES {
            let _ = write!(v, ",max_plies={}", self.max_plies);
        }
        v
    }

    fn num_actions(&self) -> usize {
        self.n * self.n * self.p
    }

    fn initial_state(&self) -> CheckersState {
        let mut pos = [[0 as Square; MAX_CHECKERS]; 2];
        for player in Player::BOTH {
            // Ids in row-major order of the start squares: ascending square indices.
            let mut m = self.start[player.index()];
            for slot in &mut pos[player.index()][..self.p] {
                *slot = m.trailing_zeros() as Square;
                m &= m - 1;
            }
        }
        self.fresh_state(pos, Player::P0)
    }

    #[inline]
    fn turn(&self, s: &CheckersState) -> Turn {
        match s.result {
            Some(r) => Turn::Terminal(r),
            None => Turn::Player(s.to_move),
        }
    }

    fn legal_actions(&self, s: &CheckersState, out: &mut Vec<Action>) {
        out.clear();
        if s.result.is_some() {
            return;
        }
        let occ = self.occupancy(&s.pos, Player::P0) | self.occupancy(&s.pos, Player::P1);
        let nn = self.n * self.n;
        for (id, &from) in s.pos[s.to_move.index()][..self.p].iter().enumerate() {
            let mut dest = self.destinations(occ, from);
            while dest != 0 {
                let to = dest.trailing_zeros() as usize;
                out.push((id * nn + to) as Action);
                dest &= dest - 1;
            }
        }
    }

    fn apply(&self, s: &CheckersState, a: Action) -> CheckersState {
        debug_assert!(s.result.is_none(), "apply on a finished game");
        debug_assert!((a as usize) < self.num_actions(), "action {a} out of range");
        let nn = self.n * self.n;
        let id = a as usize / nn;
        let to = (a as usize % nn) as Square;
        let mut t = *s;
        t.pos[s.to_move.index()][id] = to;
        t.recent[s.plies as usize % CYCLE_WINDOW] = to;
        t.plies = s.plies.saturating_add(1);
        t.to_move = s.to_move.other();
        t.result = self.position_result(&t.pos, t.to_move).or_else(|| {
            if t.plies >= self.max_plies {
                return Some(GameResult::Draw);
            }
            if t.plies as usize >= CYCLE_WINDOW {
                let distinct = t.recent.iter().fold(0u64, |m, &sq| m | bit(sq));
                if distinct.count_ones() < CYCLE_MIN_DISTINCT {
                    return Some(GameResult::Draw);
                }
            }
            None
        });
        t
    }

    fn chance_outcomes(&self, _: &CheckersState, out: &mut Vec<ChanceOutcome>) {
        out.clear();
    }

    fn apply_chance(&self, s: &CheckersState, _: Outcome) -> CheckersState {
        // There is no chance in this game; a caller bug, answered with the state unchanged.
        *s
    }

    fn key(&self, s: &CheckersState) -> u128 {
        let mut k = 0u128;
        for (i, &sq) in s.pos[0][..self.p]
            .iter()
            .chain(&s.pos[1][..self.p])
            .enumerate()
        {
            k |= u128::from(sq) << (6 * i);
        }
        k | ((s.to_move.index() as u128) << (12 * self.p))
    }

    fn state_from_key(&self, k: u128) -> Result<CheckersState, GameError> {
        let bits = 12 * self.p + 1;
        if k >> bits != 0 {
            return Err(GameError::bad_key(
                self.variant(),
                k,
                format!("bits above bit {} are set; a key has {bits} bits", bits - 1),
            ));
        }
        let mut pos = [[0 as Square; MAX_CHECKERS]; 2];
        for i in 0..2 * self.p {
            pos[i / self.p][i % self.p] = ((k >> (6 * i)) & 63) as Square;
        }
        self.check_placement(&pos)
            .map_err(|reason| GameError::bad_key(self.variant(), k, reason))?;
        let to_move = Player::from_index(((k >> (12 * self.p)) & 1) as usize);
        Ok(self.fresh_state(pos, to_move))
    }

    fn action_name(&self, s: &CheckersState, a: Action) -> String {
        if a as usize >= self.num_actions() {
            return format!("action {a} (out of range 0..{})", self.num_actions());
        }
        let (from, to) = self.move_squares(s, a);
        format!("{}-{}", self.square_name(from), self.square_name(to))
    }

    fn outcome_name(&self, _: &CheckersState, o: Outcome) -> String {
        format!("outcome {o} (Chinese Checkers has no chance)")
    }

    fn render(&self, s: &CheckersState) -> String {
        let n = self.n as i32;
        let mut cells = vec![String::from("."); self.n * self.n];
        for player in Player::BOTH {
            for (i, &sq) in self.checkers(s, player).iter().enumerate() {
                cells[sq as usize] = format!("{}{}", symbol(player), i + 1);
            }
        }
        let status = match s.result {
            None => format!("{} to move", symbol(s.to_move)),
            Some(GameResult::Win(w)) => format!("{} wins", symbol(w)),
            Some(GameResult::Draw) => "draw".to_string(),
        };
        let mut out = format!("{}  ply {}  {status}\n", self.variant(), s.plies);
        // Display row y = r - c runs from o's corner (top) to x's corner (bottom); within a
        // row x = r + c grows to the right, two characters a unit, so neighbours sit at
        // x +- 2 in the same row and x +- 1 in the rows above and below.
        for y in -(n - 1)..n {
            let mut line = String::new();
            for x in (y.abs()..=2 * (n - 1) - y.abs()).step_by(2) {
                let (r, c) = ((x + y) / 2, (x - y) / 2);
                let col = 2 * x as usize;
                while line.len() < col {
                    line.push(' ');
                }
                line.push_str(&cells[(r * n + c) as usize]);
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        let _ = writeln!(out, "{}", self.notation(s));
        out
    }

    fn notation(&self, s: &CheckersState) -> String {
        let list = |player: Player| {
            self.checkers(s, player)
                .iter()
                .map(|&sq| self.square_name(sq))
                .collect::<Vec<_>>()
                .join(",")
        };
        format!(
            "{}/{} {}",
            list(Player::P0),
            list(Player::P1),
            symbol(s.to_move)
        )
    }

    fn parse_notation(&self, text: &str) -> Result<CheckersState, GameError> {
        let err = |reason: String| GameError::bad_position(self.variant(), text, reason);
        let format_hint = "expected `<x squares>/<o squares> <x|o>`, e.g. \
                           `a3,a2,b2,a1,b1,c1/e7,f7,g7,f6,g6,g5 x`";
        let mut parts = text.split_whitespace();
        let (Some(board), Some(side), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(err(format_hint.to_string()));
        };
        let to_move = match side {
            "x" | "X" => Player::P0,
            "o" | "O" => Player::P1,
            other => {
                return Err(err(format!(
                    "side to move `{other}` is not known; allowed: x, o"
                )));
            }
        };
        let lists: Vec<&str> = board.split('/').collect();
        let [x_list, o_list] = lists[..] else {
            return Err(err(format_hint.to_string()));
        };
        let mut pos = [[0 as Square; MAX_CHECKERS]; 2];
        for (player, list) in Player::BOTH.into_iter().zip([x_list, o_list]) {
            let names: Vec<&str> = list.split(',').collect();
            if names.len() != self.p {
                return Err(err(format!(
                    "{} has {} squares `{list}`; expected {} (one per checker, in id order)",
                    symbol(player),
                    names.len(),
                    self.p
                )));
            }
            for (i, name) in names.iter().enumerate() {
                pos[player.index()][i] = self.parse_square(name).ok_or_else(|| {
                    err(format!(
                        "`{name}` is not a square of the {}x{} board; allowed: a1..{}{}",
                        self.n,
                        self.n,
                        (b'a' + self.n as u8 - 1) as char,
                        self.n
                    ))
                })?;
            }
        }
        self.check_placement(&pos).map_err(err)?;
        Ok(self.fresh_state(pos, to_move))
    }
}

/// Reduced boards are deterministic and may cycle: one level, solved by retrograde analysis
/// (win / loss / draw). Checker ids are part of the position (actions name them), which
/// multiplies the count by up to (p!)^2 compared to id-less counts, so only small boards are
/// feasible. The test position is the start.
impl crate::solver::Solvable for Checkers {
    fn method(&self) -> crate::solver::Method {
        crate::solver::Method::Layered
    }

    fn check_solvable(&self) -> Result<(), String> {
        let (n, p) = (self.side(), self.checkers_per_side());
        if n <= 4 || (n == 5 && p == 1) {
            Ok(())
        } else {
            Err(format!(
                "checkers:{n}x{n}-{p} has too many positions (checker ids are part of the \
                 position); the solver takes boards up to 4x4 (and 5x5 with one checker)"
            ))
        }
    }

    fn level(&self, _: &CheckersState) -> u32 {
        0
    }

    fn test_positions(&self) -> Vec<CheckersState> {
        vec![self.initial_state()]
    }

    fn perfect_index(&self) -> Option<Box<dyn crate::solver::index::PerfectIndex<Self>>> {
        let squares = (self.side() * self.side()) as u32;
        Some(Box::new(index::CheckersIndex::new(
            squares,
            self.checkers_per_side() as u32,
        )))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::games::AnyGame;
    use crate::play::{Scratch, random_playout};
    use crate::rng::{stream, uniform_index};

    fn game(v: &str) -> Checkers {
        Checkers::from_spec(&VariantSpec::parse(v).unwrap()).unwrap()
    }

    fn legal(g: &Checkers, s: &CheckersState) -> Vec<Action> {
        let mut out = Vec::new();
        g.legal_actions(s, &mut out);
        out
    }

    /// Legal move names of checker `id` (1-based) of the side to move, sorted.
    fn moves_of(g: &Checkers, s: &CheckersState, id: usize) -> Vec<String> {
        let nn = g.side() * g.side();
        let mut v: Vec<String> = legal(g, s)
            .into_iter()
            .filter(|&a| a as usize / nn == id - 1)
            .map(|a| g.action_name(s, a))
            .collect();
        v.sort();
        v
    }

    fn names(v: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        v.sort();
        v
    }

    /// Applies moves given as `from-to` names, checking each is legal.
    fn play(g: &Checkers, mut s: CheckersState, moves: &[&str]) -> CheckersState {
        for m in moves {
            let a = legal(g, &s)
                .into_iter()
                .find(|&a| g.action_name(&s, a) == *m)
                .unwrap_or_else(|| panic!("{m} is not legal in {}", g.notation(&s)));
            s = g.apply(&s, a);
        }
        s
    }

    /// Independent move generator: coordinate arithmetic and explicit path recursion.
    fn reference_moves(g: &Checkers, s: &CheckersState) -> Vec<Action> {
        let n = g.side() as i32;
        let me = s.to_move;
        let mut occupied = BTreeSet::new();
        for p in Player::BOTH {
            for &sq in g.checkers(s, p) {
                occupied.insert(g.coords(sq));
            }
        }
        let on = |r: i32, c: i32| (0..n).contains(&r) && (0..n).contains(&c);
        fn chain(
            cur: (i32, i32),
            path: &mut Vec<(i32, i32)>,
            occ: &BTreeSet<(usize, usize)>,
            on: &dyn Fn(i32, i32) -> bool,
            found: &mut BTreeSet<(i32, i32)>,
        ) {
            for (dr, dc) in DIRS {
                let over = (cur.0 + dr, cur.1 + dc);
                let land = (cur.0 + 2 * dr, cur.1 + 2 * dc);
                if on(land.0, land.1)
                    && occ.contains(&(over.0 as usize, over.1 as usize))
                    && !occ.contains(&(land.0 as usize, land.1 as usize))
                    && !path.contains(&land)
                {
                    found.insert(land);
                    path.push(land);
                    chain(land, path, occ, on, found);
                    path.pop();
                }
            }
        }
        let mut out = Vec::new();
        for (id, &sq) in g.checkers(s, me).iter().enumerate() {
            let (r, c) = g.coords(sq);
            let mut occ = occupied.clone();
            occ.remove(&(r, c));
            let start = (r as i32, c as i32);
            let mut found = BTreeSet::new();
            for (dr, dc) in DIRS {
                let to = (start.0 + dr, start.1 + dc);
                if on(to.0, to.1) && !occ.contains(&(to.0 as usize, to.1 as usize)) {
                    found.insert(to);
                }
            }
            chain(start, &mut vec![start], &occ, &on, &mut found);
            found.remove(&start);
            for (r, c) in found {
                out.push((id * g.side() * g.side() + (r * n + c) as usize) as Action);
            }
        }
        out.sort();
        out
    }

    #[test]
    fn state_is_small() {
        assert!(std::mem::size_of::<CheckersState>() <= 40);
    }

    #[test]
    fn start_position_and_ids() {
        let g = game("checkers:7x7-6");
        assert_eq!(g.num_actions(), 294);
        assert_eq!(g.variant(), "checkers:7x7-6");
        let s = g.initial_state();
        assert_eq!(g.notation(&s), "a3,a2,b2,a1,b1,c1/e7,f7,g7,f6,g6,g5 x");
        assert_eq!(g.turn(&s), Turn::Player(Player::P0));
        // Hand-derived: a3: a4, b3; a2 hops over a3 to a4 and over b2 to c2; b2: b3, c2;
        // a1 is boxed in; b1 hops over b2 to b3 and over c1 to d1; c1: c2, d1.
        let expected: Vec<Action> = vec![
            21,
            29,
            49 + 21,
            49 + 37,
            98 + 29,
            98 + 37,
            196 + 29,
            196 + 45,
            245 + 37,
            245 + 45,
        ];
        assert_eq!(legal(&g, &s), expected);
        assert_eq!(g.action_name(&s, 49 + 37), "a2-c2");
        assert_eq!(g.action_name(&s, 196 + 45), "b1-d1");
        // Player 1's start: e7 (id 1) can step to e6 = (1,4) = 11; g5 (id 6) to g4 = (3,6).
        let s = play(&g, s, &["b2-b3"]);
        assert_eq!(g.notation(&s), "a3,a2,b3,a1,b1,c1/e7,f7,g7,f6,g6,g5 o");
        let acts = legal(&g, &s);
        assert!(acts.contains(&11) && acts.contains(&(5 * 49 + 27)));
        assert_eq!(g.action_name(&s, 11), "e7-e6");
        assert_eq!(g.action_name(&s, 5 * 49 + 27), "g5-g4");
        assert_eq!(g.move_squares(&s, 5 * 49 + 27), (20, 27));
    }

    #[test]
    fn steps_and_single_hops() {
        let g = game("checkers:7x7-6");
        // x1 on d4 (3,3) in the open: six steps, no hops.
        let s = g
            .parse_notation("d4,a2,b2,a1,b1,c1/e7,f7,g7,f6,g6,g5 x")
            .unwrap();
        assert_eq!(
            moves_of(&g, &s, 1),
            names(&["d4-c4", "d4-e4", "d4-d5", "d4-d3", "d4-c5", "d4-e3"])
        );
        // Put o1 on e4 (3,4) and o2 on d5 (2,3): hops to f4 and d6, steps to the other four.
        let s = g
            .parse_notation("d4,a2,b2,a1,b1,c1/e4,d5,g7,f6,g6,g5 x")
            .unwrap();
        assert_eq!(
            moves_of(&g, &s, 1),
            names(&["d4-c4", "d4-f4", "d4-d6", "d4-d3", "d4-c5", "d4-e3"])
        );
        // A hop needs the square beyond to be empty and on the board.
        let s = g
            .parse_notation("d4,f4,b2,a1,b1,c1/e4,d5,d6,f6,g6,g5 x")
            .unwrap();
        assert_eq!(
            moves_of(&g, &s, 1),
            names(&["d4-c4", "d4-d3", "d4-c5", "d4-e3"])
        );
        let s = g
            .parse_notation("g4,a2,b2,a1,b1,c1/e7,f7,g7,g6,f4,g5 x")
            .unwrap();
        // g4 = (3,6) on the right edge: over f4 to e4; not over g5 (2,6), as g6 is taken.
        assert_eq!(moves_of(&g, &s, 1), names(&["g4-e4", "g4-g3", "g4-f5"]));
    }

    #[test]
    fn multi_hop_chain_with_a_branch() {
        let g = game("checkers:7x7-6");
        // x1 on a4 (3,0). Chain: over b4 (3,1) to c4 (3,2); from c4 it branches: over d4
        // (3,3) to e4 (3,4), or over c5 (2,2) to c6 (1,2); from e4 on over e5 (2,4) to e6
        // (1,4). Steps: a5, a3, b3 (b4 is taken).
        let s = g
            .parse_notation("a4,a2,b2,a1,b1,c1/b4,d4,c5,e5,g6,g7 x")
            .unwrap();
        assert_eq!(
            moves_of(&g, &s, 1),
            names(&[
                "a4-a5", "a4-a3", "a4-b3", "a4-c4", "a4-e4", "a4-c6", "a4-e6"
            ])
        );
        assert_eq!(legal(&g, &s), reference_moves(&g, &s));
    }

    #[test]
    fn chains_never_revisit_and_duplicates_are_one_move() {
        let g = game("checkers:7x7-6");
        // x1 on c5 (2,2) with checkers on d5 (2,3), d4 (3,3), e4 (3,4). Hops: over d5 to e5
        // (2,4) and over d4 to e3 (4,4). From e5 over e4 to e3 again (a duplicate) and from
        // e3 over d4 back to c5 (the start: no move). Steps: b5, c6, b6, c4.
        let s = g
            .parse_notation("c5,a2,b2,a1,b1,c1/d5,d4,e4,f7,g7,g6 x")
            .unwrap();
        let m = moves_of(&g, &s, 1);
        assert_eq!(
            m,
            names(&["c5-b5", "c5-c6", "c5-b6", "c5-c4", "c5-e5", "c5-e3"])
        );
        assert_eq!(legal(&g, &s), reference_moves(&g, &s));
    }

    #[test]
    fn ids_are_stable_after_moves() {
        let g = game("checkers:7x7-6");
        let s = play(
            &g,
            g.initial_state(),
            &["b1-d1", "f6-f5", "a2-c2", "e7-e6", "d1-d2"],
        );
        assert_eq!(g.notation(&s), "a3,c2,b2,a1,d2,c1/e6,f7,g7,f5,g6,g5 o");
        // x5 is still id 5: its actions are 4*49 + destination.
        let t = play(&g, s, &["g5-g4"]);
        let a = legal(&g, &t)
            .into_iter()
            .find(|&a| g.action_name(&t, a) == "d2-d3")
            .unwrap();
        assert_eq!(a as usize, 4 * 49 + g.square(4, 3) as usize);
        // Keys carry ids: swapping two of x's checkers is another position.
        let u = g
            .parse_notation("a3,b2,c2,a1,d2,c1/e6,f7,g7,f5,g6,g5 o")
            .unwrap();
        assert_ne!(g.key(&u), g.key(&s));
    }

    #[test]
    fn all_own_win() {
        let g = game("checkers:7x7-6");
        // x has five checkers in o's triangle and steps into the sixth square.
        let s = g
            .parse_notation("f7,g7,f6,g6,g5,e6/a3,a2,b2,a1,b1,d4 x")
            .unwrap();
        assert_eq!(g.turn(&s), Turn::Player(Player::P0));
        let t = play(&g, s, &["e6-e7"]);
        assert_eq!(g.turn(&t), Turn::Terminal(GameResult::Win(Player::P0)));
        assert!(legal(&g, &t).is_empty());
        // The same position decoded from its key is finished too.
        let fresh = g.state_from_key(g.key(&t)).unwrap();
        assert_eq!(g.turn(&fresh), Turn::Terminal(GameResult::Win(Player::P0)));
        // o wins the mirrored way (x, five of six home, has not won).
        let s = g
            .parse_notation("e7,f7,g7,f6,g6,d4/a3,a2,b2,a1,b1,d1 o")
            .unwrap();
        assert_eq!(g.turn(&s), Turn::Player(Player::P1));
        let t = play(&g, s, &["d1-c1"]);
        assert_eq!(g.turn(&t), Turn::Terminal(GameResult::Win(Player::P1)));
    }

    #[test]
    fn filled_defeats_a_player_who_never_leaves_home() {
        // o keeps its checker on g7 at home for good; x fills the other five squares of o's
        // triangle with g4-g5.
        let pos = "f7,e7,f6,g6,g4,d4/g7,a1,b1,c1,a2,d2 x";
        let filled = game("checkers:7x7-6,win=filled");
        let s = filled.parse_notation(pos).unwrap();
        assert_eq!(filled.turn(&s), Turn::Player(Player::P0));
        let t = play(&filled, s, &["g4-g5"]);
        assert_eq!(filled.turn(&t), Turn::Terminal(GameResult::Win(Player::P0)));
        // Under all-own the same move wins nothing: o's g7 checker blocks the sixth square.
        let all = game("checkers:7x7-6");
        let t = play(&all, all.parse_notation(pos).unwrap(), &["g4-g5"]);
        assert_eq!(all.turn(&t), Turn::Player(Player::P1));
        // A full goal without any own checker is no win (the start position under filled).
        assert_eq!(
            filled.turn(&filled.initial_state()),
            Turn::Player(Player::P0)
        );
    }

    #[test]
    fn filled_can_be_completed_by_the_opponent() {
        // x has g7 in o's triangle; o's own checker hops back home from f5 over f6 into f7,
        // the last hole: o's move fills x's goal, so x wins (o's own goal is not full).
        let g = game("checkers:7x7-6,win=filled");
        let s = g
            .parse_notation("g7,a1,b1,c1,a2,b2/e7,f5,f6,g6,g5,d2 o")
            .unwrap();
        assert_eq!(g.turn(&s), Turn::Player(Player::P1));
        let t = play(&g, s, &["f5-f7"]);
        assert_eq!(g.turn(&t), Turn::Terminal(GameResult::Win(Player::P0)));
    }

    #[test]
    fn blocked_player_loses() {
        let g = game("checkers:5x5-10");
        assert_eq!(g.num_actions(), 250);
        // o (to move) has all ten checkers home; x holds every square at distance one or at
        // hop distance two from the five empty squares a1, b1, c1, a2, a3, so o cannot move.
        let stuck = "a4,b3,b2,c2,d1,c3,a5,e1,b4,d2/b5,c5,d5,e5,c4,d4,e4,d3,e3,e2 o";
        let s = g.parse_notation(stuck).unwrap();
        assert_eq!(g.turn(&s), Turn::Terminal(GameResult::Win(Player::P0)));
        assert!(legal(&g, &s).is_empty());
        assert!(reference_moves(&g, &s).is_empty());
        // Reached by a move: x steps c1-d1 and shuts the last door.
        let before = "a4,b3,b2,c2,c1,c3,a5,e1,b4,d2/b5,c5,d5,e5,c4,d4,e4,d3,e3,e2 x";
        let s = g.parse_notation(before).unwrap();
        assert_eq!(g.turn(&s), Turn::Player(Player::P0));
        let t = play(&g, s, &["c1-d1"]);
        assert_eq!(g.turn(&t), Turn::Terminal(GameResult::Win(Player::P0)));
        assert_eq!(g.notation(&t), stuck);
        // With x to move in the stuck position, x can move and the game goes on.
        let s = g.parse_notation(&stuck.replace(" o", " x")).unwrap();
        assert_eq!(g.turn(&s), Turn::Player(Player::P0));
    }

    #[test]
    fn move_limit_draw_at_exactly_max_plies() {
        let g = game("checkers:7x7-6,max_plies=10");
        assert_eq!(g.variant(), "checkers:7x7-6,max_plies=10");
        let shuttle = ["a3-a4", "g5-g4", "a4-a3", "g4-g5"];
        let mut s = g.initial_state();
        for ply in 0..10 {
            assert_eq!(g.turn(&s), Turn::Player(Player::from_index(ply % 2)));
            s = play(&g, s, &[shuttle[ply % 4]]);
        }
        assert_eq!(g.plies(&s), 10);
        assert_eq!(g.turn(&s), Turn::Terminal(GameResult::Draw));
        // The counters are not in the key: the fresh position plays on.
        let fresh = g.state_from_key(g.key(&s)).unwrap();
        assert_eq!(g.turn(&fresh), Turn::Player(Player::P0));
        // A win on the last ply is still a win.
        let g = game("checkers:7x7-6,max_plies=1");
        let s = g
            .parse_notation("f7,g7,f6,g6,g5,e6/a3,a2,b2,a1,b1,d4 x")
            .unwrap();
        let t = play(&g, s, &["e6-e7"]);
        assert_eq!(g.turn(&t), Turn::Terminal(GameResult::Win(Player::P0)));
        let t = play(&g, s, &["e6-e5"]);
        assert_eq!(g.turn(&t), Turn::Terminal(GameResult::Draw));
    }

    #[test]
    fn short_cycle_draw_after_sixteen_plies() {
        let g = game("checkers:7x7-6");
        // Four distinct destinations (a4, g4, a3, g5) over and over.
        let shuttle = ["a3-a4", "g5-g4", "a4-a3", "g4-g5"];
        let mut s = g.initial_state();
        for ply in 0..16 {
            assert_eq!(
                g.turn(&s),
                Turn::Player(Player::from_index(ply % 2)),
                "{ply}"
            );
            s = play(&g, s, &[shuttle[ply % 4]]);
        }
        assert_eq!(g.turn(&s), Turn::Terminal(GameResult::Draw));

        // Six distinct destinations in every window of 16 keep the game going; five do not.
        // x turns in a triangle a3-a4-b3 (destinations a4, b3, a3), o in g5-g4-f5.
        let six = ["a3-a4", "g5-g4", "a4-b3", "g4-f5", "b3-a3", "f5-g5"];
        let mut s = g.initial_state();
        for ply in 0..60 {
            s = play(&g, s, &[six[ply % 6]]);
            assert_eq!(g.turn(&s), Turn::Player(Player::from_index((ply + 1) % 2)));
        }
        // x cycles a4, b3, a3 while o shuttles g4, g5 (five distinct): drawn at ply 16.
        let five_x = ["a3-a4", "a4-b3", "b3-a3"];
        let five_o = ["g5-g4", "g4-g5"];
        let mut s = g.initial_state();
        for ply in 0..16 {
            assert!(matches!(g.turn(&s), Turn::Player(_)), "{ply}");
            let m = if ply % 2 == 0 {
                five_x[(ply / 2) % 3]
            } else {
                five_o[(ply / 2) % 2]
            };
            s = play(&g, s, &[m]);
        }
        assert_eq!(g.turn(&s), Turn::Terminal(GameResult::Draw));
    }

    #[test]
    fn forward_gain_signs() {
        let g = game("checkers:7x7-6");
        let s = g.initial_state();
        // x: a3 (4,0) -> a4 (3,0): Psi = (4 - 0) - (3 - 0) = 1. b2 (5,1) -> c2 (5,2): 1.
        let (f, t) = g.move_squares(&s, 21);
        assert_eq!(g.forward_gain(Player::P0, f, t), 1);
        // a2 (5,0) hops to c2 (5,2): 2. Moving sideways along r - c constant: 0.
        assert_eq!(
            g.forward_gain(Player::P0, g.square(5, 0), g.square(5, 2)),
            2
        );
        assert_eq!(
            g.forward_gain(Player::P0, g.square(3, 3), g.square(4, 4)),
            0
        );
        // o goes the other way: g5 (2,6) -> g4 (3,6) is forward for o.
        assert_eq!(
            g.forward_gain(Player::P1, g.square(2, 6), g.square(3, 6)),
            1
        );
        assert_eq!(
            g.forward_gain(Player::P0, g.square(2, 6), g.square(3, 6)),
            -1
        );
    }

    #[test]
    fn keys_and_notation_round_trip_and_reject_garbage() {
        let g = game("checkers:7x7-6");
        let s = play(&g, g.initial_state(), &["b1-d1", "f6-f5", "a2-c2"]);
        let k = g.key(&s);
        let t = g.state_from_key(k).unwrap();
        assert_eq!(g.key(&t), k);
        assert_eq!(g.notation(&t), g.notation(&s));
        assert_eq!(k >> 72, 1); // o to move
        // Start: x1 = a3 = (4,0) = 28 in the low six bits.
        assert_eq!(g.key(&g.initial_state()) & 63, 28);
        let bad = |k: u128| g.state_from_key(k).unwrap_err().to_string();
        let start = g.key(&g.initial_state());
        // Square index 49 is off the board.
        assert!(bad((start & !63) | 49).contains("off the 7x7 board"));
        // x1 onto x2's square.
        assert!(bad((start & !63) | 35).contains("two checkers"));
        assert!(bad(start | (1 << 73)).contains("bits above"));
        for (text, needle) in [
            ("a3,a2,b2,a1,b1/e7,f7,g7,f6,g6,g5 x", "expected 6"),
            ("a3,a2,b2,a1,b1,h1/e7,f7,g7,f6,g6,g5 x", "h1"),
            ("a3,a2,b2,a1,b1,a3/e7,f7,g7,f6,g6,g5 x", "two checkers"),
            ("a3,a2,b2,a1,b1,c1/e7,f7,g7,f6,g6,g5 z", "allowed: x, o"),
            ("a3,a2,b2,a1,b1,c1 x", "expected `"),
            ("a3,a2,b2,a1,b1,c1/e7,f7,g7,f6,g6,g5", "expected `"),
            ("a3,a2,b2,a1,b1,c0/e7,f7,g7,f6,g6,g5 x", "c0"),
        ] {
            let e = g.parse_notation(text).unwrap_err().to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
        let r = g.render(&g.initial_state());
        assert!(r.starts_with("checkers:7x7-6  ply 0  x to move\n"), "{r}");
        // o's corner g7 (o3) on top, x's corner a1 (x4) at the bottom, 13 rows.
        let lines: Vec<&str> = r.lines().collect();
        assert_eq!(lines[1].trim(), "o3");
        assert_eq!(lines[2].trim(), "o2  o5");
        assert_eq!(lines[13].trim(), "x4");
        assert_eq!(lines[7].trim(), ".   .   .   .   .   .   .");
    }

    #[test]
    fn option_and_size_errors() {
        for (bad, needle) in [
            ("checkers:7x7-5", "allowed: 1, 3, 6, 10"),
            ("checkers:4x4-10", "allowed: 1, 3, 6"),
            ("checkers:3x3-6", "allowed: 1, 3"),
            ("checkers:7x7-15", "allowed: 1, 3, 6, 10"),
            ("checkers:7x5-3", "square"),
            ("checkers:9x9-6", "2..=8"),
            ("checkers:1x1-1", "2..=8"),
            ("checkers:7x7", "NxN-p"),
            ("checkers:7x7-x", "allowed: 1, 3, 6, 10"),
            ("checkers:axb-3", "NxN-p"),
            ("checkers:7x7-6,win=sometimes", "all-own (default), filled"),
            ("checkers:7x7-6,max_plies=0", "1..=10000"),
            ("checkers:7x7-6,max_plies=99999", "1..=10000"),
            ("checkers:7x7-6,colour=red", "win, max_plies"),
            ("checkers:99999999999x99999999999-6", "NxN-p"),
        ] {
            let e = bad.parse::<AnyGame>().expect_err(bad).to_string();
            assert!(e.contains(needle), "{bad}: {e}");
        }
        for (v, canon, actions) in [
            (
                "checkers:7x7-6,max_plies=200,win=all-own",
                "checkers:7x7-6",
                294,
            ),
            ("checkers:5x5-3,win=FILLED", "checkers:5x5-3,win=filled", 75),
            ("checkers:2x2-1", "checkers:2x2-1", 4),
            ("checkers:8x8-10", "checkers:8x8-10", 640),
        ] {
            let g: AnyGame = v.parse().unwrap();
            assert_eq!(g.variant(), canon);
            assert_eq!(g.num_actions(), actions);
        }
    }

    #[test]
    fn random_play_matches_the_reference_generator_on_every_size() {
        let mut scratch = Vec::new();
        for v in [
            "checkers:2x2-1",
            "checkers:3x3-1",
            "checkers:4x4-3",
            "checkers:5x5-3",
            "checkers:5x5-10,win=filled",
            "checkers:6x6-6",
            "checkers:8x8-10",
        ] {
            let g = game(v);
            for i in 0..8 {
                let mut rng = stream(3, &format!("checkers-ref({v},{i})"));
                let mut s = g.initial_state();
                while let Turn::Player(_) = g.turn(&s) {
                    g.legal_actions(&s, &mut scratch);
                    assert_eq!(scratch, reference_moves(&g, &s), "{v}: {}", g.notation(&s));
                    let k = g.key(&s);
                    assert_eq!(g.key(&g.state_from_key(k).unwrap()), k);
                    assert_eq!(g.key(&g.parse_notation(&g.notation(&s)).unwrap()), k);
                    let a = scratch[uniform_index(&mut rng, scratch.len())];
                    s = g.apply(&s, a);
                }
                assert!(g.plies(&s) <= g.max_plies(), "{v}");
            }
        }
    }

    #[test]
    fn random_games_end() {
        let mut scratch = Scratch::new();
        // On 7x7-6 random play never gets six checkers home: every game runs into the move
        // limit (20,000 games measured, see `random_play_statistics`), and the short-cycle
        // detector does not fire on random moves.
        let g = game("checkers:7x7-6");
        for i in 0..100 {
            let mut rng = stream(5, &format!("checkers-random({i})"));
            let (r, plies) = random_playout(&g, g.initial_state(), &mut rng, &mut scratch);
            assert_eq!((r, plies), (GameResult::Draw, 200));
        }
        // On 5x5-3 without a tight limit random games do end with a winner, who really has
        // all three checkers in its goal triangle.
        let g = game("checkers:5x5-3,max_plies=10000");
        let mut wins = [0; 2];
        for i in 0..40 {
            let mut rng = stream(5, &format!("checkers-random-5x5({i})"));
            let mut s = g.initial_state();
            while let Turn::Player(_) = g.turn(&s) {
                g.legal_actions(&s, &mut scratch.actions);
                s = g.apply(
                    &s,
                    scratch.actions[uniform_index(&mut rng, scratch.actions.len())],
                );
            }
            if let Turn::Terminal(GameResult::Win(w)) = g.turn(&s) {
                wins[w.index()] += 1;
                let goal = g.goal_triangle(w);
                assert!(g.checkers(&s, w).iter().all(|&sq| goal & bit(sq) != 0));
                // The winner moved last.
                assert_eq!(s.to_move, w.other());
            }
        }
        assert!(
            wins[0] > 0 && wins[1] > 0 && wins[0] + wins[1] >= 30,
            "{wins:?}"
        );
    }

    /// Figures for the report: `cargo test --release --lib games::checkers -- --ignored
    /// --nocapture`.
    #[test]
    #[ignore]
    fn random_play_statistics() {
        for (v, games) in [
            ("checkers:7x7-6", 20_000u32),
            ("checkers:5x5-3", 20_000),
            ("checkers:7x7-6,win=filled", 20_000),
            ("checkers:7x7-6,max_plies=10000", 500),
            ("checkers:5x5-3,max_plies=10000", 2_000),
        ] {
            let g = game(v);
            let mut scratch = Scratch::new();
            let (mut total, mut wins, mut draws) = (0u64, [0u32; 2], 0u32);
            let mut limit = 0u32;
            let t0 = std::time::Instant::now();
            for i in 0..games {
                let mut rng = stream(7, &format!("checkers-stats({i})"));
                let (r, plies) = random_playout(&g, g.initial_state(), &mut rng, &mut scratch);
                total += u64::from(plies);
                match r {
                    GameResult::Win(p) => wins[p.index()] += 1,
                    GameResult::Draw => {
                        draws += 1;
                        if plies == u32::from(g.max_plies()) {
                            limit += 1;
                        }
                    }
                }
            }
            let secs = t0.elapsed().as_secs_f64();
            eprintln!(
                "{v}: {games} random games, mean length {:.1} plies, x wins {}, o wins {}, \
                 draws {draws} ({limit} by the move limit), {:.0} games/s, {:.2} M plies/s",
                total as f64 / f64::from(games),
                wins[0],
                wins[1],
                f64::from(games) / secs,
                total as f64 / secs / 1e6
            );
        }
    }
}
