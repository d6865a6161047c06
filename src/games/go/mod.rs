//! Go on an N x N board, with OpenSpiel's `go` rules exactly (docs/games.md, "Go").
//!
//! # Rules
//! Two players, black (`x`, player 0, moves first) and white (`o`, player 1), alternately
//! place a stone on an empty point or pass. A *chain* is a maximal set of same-coloured stones
//! joined through horizontal and vertical neighbours; its *liberties* are the empty points
//! next to it. After a stone is placed, every enemy chain next to it without liberties is
//! removed (captured). The legal moves are exactly OpenSpiel's (`GoBoard::IsLegalMove`):
//! - pass is always legal;
//! - a stone may go on an empty point unless that point is the *ko point*, and unless it would
//!   be suicide: it is legal when the point has an empty neighbour, or joins an own chain that
//!   keeps another liberty, or captures an enemy chain (one whose only liberty is this point).
//!   Suicide (single-stone or multi-stone) is never legal.
//! - The ko point is set by a move that is played on a point whose neighbours are all enemy
//!   stones or the board's edge and that captures exactly one stone: the captured stone's
//!   point is then forbidden to the opponent for its next move (simple ko). Any other move,
//!   a pass included, clears it.
//! - Superko, as OpenSpiel applies it: the legal moves are *not* filtered by it. Every board
//!   (the stones alone, neither the side to move nor the ko point) seen so far is remembered,
//!   the start included; a move other than a pass that recreates one of them ends the game at
//!   once, drawn (OpenSpiel's "superko is treated as a draw"). This is positional superko
//!   detected after the fact.
//!
//! The game ends after two consecutive passes, on such a repetition, or when `max_moves` moves
//! (passes included) have been played. Except for a repetition draw, it is then scored by
//! Tromp-Taylor area scoring: a player's points are its stones plus the empty regions that
//! reach only its stones; black wins when its points minus white's exceed the komi, white
//! wins when they fall short, and an exact tie (an integral komi) is a draw. Scores are win 1,
//! draw 0.5, loss 0 (OpenSpiel's returns 1, 0, -1). Nothing is removed as dead at the end.
//!
//! # Parameters
//! `go:NxN[,komi=K][,max_moves=M]` (`go` alone = `go:9x9`): N in 5..=19; K a multiple of 0.5
//! with |K| <= N*N, default 7.5; M in 2..=2*N*N, default 2*N*N (OpenSpiel's
//! `max_game_length`). The canonical name leaves out options at their defaults.
//!
//! # Actions (|A| = N*N + 1)
//! OpenSpiel's numbering: the point in row r (0 = the bottom row, `1`) and column c (0 = the
//! left column, `A`) is action r*N + c; pass is N*N. Names are GTP vertices: the column letter
//! A.. without I, then the row number (`E5`, `J9`), and `pass`.
//!
//! # Engine
//! A board with a border of guard points (stride N + 2), as OpenSpiel's: each point holds its
//! colour, its chain's head and the next stone of its chain (a circular list). Each chain
//! keeps, at its head, its size and its *pseudo-liberties* (pairs of a stone and an empty
//! neighbour: their count, the sum of their points and of their squares), updated
//! incrementally as stones are placed, chains merged (the smaller into the larger) and
//! captured. A chain has a single liberty exactly when count * squares = sum^2, which is all
//! the legal-move test needs (OpenSpiel's test, in 64 bits). Nothing is allocated per move.
//! The board hash is a Zobrist key (one 64-bit word per point and colour, drawn once from the
//! named stream `go-zobrist` under seed 0); the boards seen so far are kept as their hashes,
//! as OpenSpiel keeps them.
//!
//! A state is a `Copy` value whose arrays are sized for the largest board of its class: the
//! registry holds boards up to 9x9 as [`Go9`] (about 3.6 KB a state) and larger ones as
//! [`Go19`] (about 14 KB), so the 9x9 game copies less; random playouts apply moves in place
//! ([`Game::apply_in_place`]) and copy nothing.
//!
//! # Key
//! `[u64; K]` (K = 3 for [`Go9`], 12 for [`Go19`]): two bits per point in action order
//! (0 empty, 1 black, 2 white) from bit 0, then the side to move (1 bit, 1 = white), the ko
//! point (9 bits: 0 none, else the action + 1) and the number of consecutive passes that ended
//! the last moves (2 bits: 0, 1, or 2 = the game is over). The move count and the boards seen
//! (the repetition rule) are draw counters: kept in the state, not in the key.
//! [`Game::state_from_key`] rejects unknown codes, chains without liberties, a ko point that
//! is not an empty point surrounded by the last mover's stones, and a ko point with a pass.
//!
//! # Notation
//! One line: `<rows> <side>[ ko=<vertex>][ passes=<1|2>]`. Rows top (row N) to bottom (row 1),
//! separated by `/`, one character per point: `.` empty, `x` black, `o` white; side `x` or `o`
//! to move. Example (5x5 after C3, pass): `...../...../..x../...../..... x passes=1`.

mod abilities;
mod encode;

use std::fmt;
use std::sync::OnceLock;

use crate::error::GameError;
use crate::game::{Action, ChanceOutcome, Game, GameResult, Outcome, Player, Turn};
use crate::games::{FamilyInfo, VariantSpec, parse_dims};

pub(crate) const FAMILY: FamilyInfo = FamilyInfo {
    name: "go",
    title: "Go (Tromp-Taylor area scoring, OpenSpiel's `go` rules)",
    syntax: "go:NxN[,komi=K][,max_moves=M] (go alone = go:9x9)",
    parameters: &[
        ("N", "board side, 5..=19"),
        (
            "komi",
            "a multiple of 0.5 with |K| <= N*N, default 7.5 (white's compensation)",
        ),
        (
            "max_moves",
            "2..=2*N*N, default 2*N*N: the game ends and is scored after this many moves",
        ),
    ],
    action_space: "N*N + 1 (row * N + column from the bottom left; N*N = pass)",
    examples: &["go:9x9", "go:7x7", "go:5x5", "go:9x9,komi=6.5", "go:19x19"],
};

/// Go on boards up to 9x9 (121 points with the border, and 16 guard points after it that the
/// legal-move scan reads sixteen at a time; the default class).
pub type Go9 = Go<137, 163, 3>;
/// Go on boards from 10x10 to 19x19 (441 points with the border, 16 more).
pub type Go19 = Go<457, 723, 12>;
/// A state of [`Go9`].
pub type Go9State = GoState<137, 163>;

/// The largest board.
const MAX_N: usize = 19;
const MIN_N: usize = 5;
/// Points of the largest bordered board.
const MAX_POINTS: usize = (MAX_N + 2) * (MAX_N + 2) + 16;

const EMPTY: u8 = 0;
const BLACK: u8 = 1;
const WHITE: u8 = 2;
const GUARD: u8 = 3;

/// The state's result code.
const ONGOING: u8 = 0;
const BLACK_WINS: u8 = 1;
const WHITE_WINS: u8 = 2;
const DRAW: u8 = 3;

/// The Zobrist table: one word per point of the largest board and colour (black, white).
fn zobrist() -> &'static [[u64; 2]; MAX_POINTS] {
    static TABLE: OnceLock<Box<[[u64; 2]; MAX_POINTS]>> = OnceLock::new();
    TABLE.get_or_init(|| {
        use rand_core::Rng;
        let mut rng = crate::rng::stream(0, "go-zobrist");
        let mut t = Box::new([[0u64; 2]; MAX_POINTS]);
        for row in t.iter_mut() {
            for w in row.iter_mut() {
                *w = rng.next_u64();
            }
        }
        t
    })
}

/// A position key: `K` words (see the module docs).
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct GoKey<const K: usize>(pub [u64; K]);

impl<const K: usize> serde::Serialize for GoKey<K> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let mut t = ser.serialize_tuple(K)?;
        for w in &self.0 {
            t.serialize_element(w)?;
        }
        t.end()
    }
}

impl<'de, const K: usize> serde::Deserialize<'de> for GoKey<K> {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct Words<const K: usize>;
        impl<'de, const K: usize> serde::de::Visitor<'de> for Words<K> {
            type Value = GoKey<K>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "{K} 64-bit words")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<GoKey<K>, A::Error> {
                let mut k = [0u64; K];
                for (i, w) in k.iter_mut().enumerate() {
                    *w = seq
                        .next_element()?
                        .ok_or_else(|| serde::de::Error::invalid_length(i, &self))?;
                }
                Ok(GoKey(k))
            }
        }
        de.deserialize_tuple(K, Words::<K>)
    }
}

/// Whether a colour code is a stone.
#[inline]
fn is_stone(c: u8) -> bool {
    c.wrapping_sub(1) < 2
}

/// A Go position with its history: board, chains, side to move, ko, passes, and the hashes of
/// the boards seen (`P` bordered points, room for `H` boards).
#[derive(Copy, Clone, PartialEq, Eq)]
pub struct GoState<const P: usize, const H: usize> {
    /// EMPTY, BLACK, WHITE or GUARD per bordered point.
    color: [u8; P],
    /// The head point of a stone's chain (stones only).
    head: [u16; P],
    /// The next stone of a stone's chain (a circular list).
    next: [u16; P],
    /// At a chain's head: its stones.
    size: [u16; P],
    /// At a chain's head: its pseudo-liberties (stone, empty neighbour) ...
    libs: [u16; P],
    /// ... the sum of their empty points ...
    lsum: [u32; P],
    /// ... and the sum of their squares.
    lsq: [u32; P],
    /// Zobrist hash of the stones.
    hash: u64,
    /// Moves played since the start (or since the state was rebuilt from a key).
    moves: u16,
    /// The ko point (0: none).
    ko: u16,
    /// Boards in `seen`.
    seen_len: u16,
    /// 0 black, 1 white.
    to_play: u8,
    /// Consecutive passes just played (2 ends the game).
    passes: u8,
    /// ONGOING or the result.
    result: u8,
    /// The game ended on a repeated board.
    superko: bool,
    /// Hashes of the boards seen, the start included (passes add none: they repeat a board).
    seen: [u64; H],
}

impl<const P: usize, const H: usize> fmt::Debug for GoState<P, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The stride from the guard points: the first row and the next row's first point are
        // guards.
        let side = self
            .color
            .iter()
            .position(|&c| c != GUARD)
            .unwrap_or(2)
            .max(2)
            - 1;
        let mut rows = Vec::new();
        for r in 0..side.min(P / side) {
            let row: String = (0..side)
                .map(|c| match self.color[r * side + c] {
                    EMPTY => '.',
                    BLACK => 'x',
                    WHITE => 'o',
                    _ => '#',
                })
                .collect();
            rows.push(row);
        }
        f.debug_struct("GoState")
            .field("board", &rows.join("/"))
            .field("to_play", &self.to_play)
            .field("ko", &self.ko)
            .field("passes", &self.passes)
            .field("moves", &self.moves)
            .field("superko", &self.superko)
            .field("result", &self.result)
            .field("hash", &format_args!("{:#018x}", self.hash))
            .finish()
    }
}

/// Go on an N x N board; `P` bordered points, `H` boards of history and `K` key words bound
/// the class (see [`Go9`] and [`Go19`]).
#[derive(Clone)]
pub struct Go<const P: usize, const H: usize, const K: usize> {
    n: usize,
    stride: usize,
    /// Twice the komi.
    komi2: i32,
    max_moves: u16,
    zobrist: &'static [[u64; 2]; MAX_POINTS],
}

impl<const P: usize, const H: usize, const K: usize> fmt::Debug for Go<P, H, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Go")
            .field("n", &self.n)
            .field("komi2", &self.komi2)
            .field("max_moves", &self.max_moves)
            .finish()
    }
}

impl<const P: usize, const H: usize, const K: usize> PartialEq for Go<P, H, K> {
    fn eq(&self, other: &Self) -> bool {
        (self.n, self.komi2, self.max_moves) == (other.n, other.komi2, other.max_moves)
    }
}

/// A variant's parameters, before the class is chosen.
pub(crate) struct GoParams {
    pub n: usize,
    pub(crate) komi2: i32,
    pub max_moves: u16,
}

impl GoParams {
    pub(crate) fn from_spec(spec: &VariantSpec) -> Result<GoParams, GameError> {
        let mut spec = spec.clone();
        let n = if spec.params.is_empty() {
            9
        } else {
            let d = parse_dims(&spec, &spec.params, 2, "NxN (the board side), e.g. go:9x9")?;
            if d[0] != d[1] {
                return Err(spec.error(format!(
                    "the board must be square (NxN), got {}x{}; allowed: NxN with N {MIN_N}..={MAX_N}",
                    d[0], d[1]
                )));
            }
            d[0] as usize
        };
        if !(MIN_N..=MAX_N).contains(&n) {
            return Err(spec.error(format!(
                "board side {n} is not allowed; allowed: {MIN_N}..={MAX_N}, e.g. go:9x9"
            )));
        }
        let points = (n * n) as i32;
        let komi2 = match spec.take("komi") {
            None => 15,
            Some(v) => {
                let twice = v.parse::<f64>().ok().map(|k| k * 2.0);
                match twice {
                    Some(t) if t.fract() == 0.0 && t.abs() <= 2.0 * points as f64 => t as i32,
                    _ => {
                        return Err(spec.error(format!(
                            "option komi={v} is not allowed; allowed: a multiple of 0.5 from \
                             -{points} to {points}, e.g. 7.5 or 6"
                        )));
                    }
                }
            }
        };
        let max_moves = spec.take_int("max_moves", 2..=2 * points as u32, 2 * points as u32)?;
        spec.finish(&["komi", "max_moves"])?;
        Ok(GoParams {
            n,
            komi2,
            max_moves: max_moves as u16,
        })
    }

    /// Whether the board fits [`Go9`].
    pub(crate) fn small(&self) -> bool {
        self.n <= 9
    }
}

/// A vertex name: column letter (no I) and row number, e.g. `E5`.
pub(crate) fn vertex_name(row: usize, col: usize) -> String {
    format!("{}{}", COLS[col] as char, row + 1)
}

/// The column letters of vertex names (GTP's): no I.
const COLS: &[u8] = b"ABCDEFGHJKLMNOPQRST";

/// Parses a vertex name (either case) into (row, column), within an `n` board.
pub(crate) fn parse_vertex(text: &str, n: usize) -> Option<(usize, usize)> {
    let text = text.trim();
    let mut chars = text.chars();
    let letter = chars.next()?.to_ascii_uppercase();
    let col = COLS.iter().position(|&c| c as char == letter)?;
    let row: usize = chars.as_str().parse().ok()?;
    // `then`, not `then_some`: row 0 must not be subtracted from.
    (col < n && (1..=n).contains(&row)).then(|| (row - 1, col))
}

impl<const P: usize, const H: usize, const K: usize> Go<P, H, K> {
    /// The game with these parameters; they must fit the class.
    pub(crate) fn new(p: &GoParams) -> Go<P, H, K> {
        assert!(
            (p.n + 2) * (p.n + 2) + 16 <= P && 2 * p.n * p.n < H && 2 * p.n * p.n + 12 <= 64 * K,
            "board {} does not fit this class",
            p.n
        );
        Go {
            n: p.n,
            stride: p.n + 2,
            komi2: p.komi2,
            max_moves: p.max_moves,
            zobrist: zobrist(),
        }
    }

    /// The board side N.
    pub fn board_size(&self) -> usize {
        self.n
    }

    /// The komi.
    pub fn komi(&self) -> f64 {
        self.komi2 as f64 / 2.0
    }

    /// The move limit.
    pub fn max_moves(&self) -> usize {
        self.max_moves as usize
    }

    /// The pass action, N*N.
    pub fn pass_action(&self) -> Action {
        (self.n * self.n) as Action
    }

    /// The stone at `row` (0 = the bottom) and `col` (0 = the left), if any.
    pub fn stone(&self, s: &GoState<P, H>, row: usize, col: usize) -> Option<Player> {
        if row >= self.n || col >= self.n {
            return None;
        }
        match s.color[self.point(row, col)] {
            BLACK => Some(Player::P0),
            WHITE => Some(Player::P1),
            _ => None,
        }
    }

    /// The side to move; after the end, the side that would move next.
    pub fn side_to_move(&self, s: &GoState<P, H>) -> Player {
        Player::from_index(s.to_play as usize)
    }

    /// Moves played (passes included) since the start or since the state was rebuilt.
    pub fn moves_played(&self, s: &GoState<P, H>) -> usize {
        s.moves as usize
    }

    /// Whether the game ended on a repeated board (a draw).
    pub fn ended_by_repetition(&self, s: &GoState<P, H>) -> bool {
        s.superko
    }

    /// Black's area minus white's (Tromp-Taylor, stones plus surrounded empty regions),
    /// before komi.
    pub(crate) fn area_difference(&self, s: &GoState<P, H>) -> i32 {
        let mut delta = 0i32;
        let mut marked = [false; P];
        let mut stack = [0u16; P];
        for r in 0..self.n {
            for c in 0..self.n {
                let p = self.point(r, c);
                match s.color[p] {
                    BLACK => delta += 1,
                    WHITE => delta -= 1,
                    _ if marked[p] => {}
                    _ => {
                        let (mut count, mut black, mut white) = (0i32, false, false);
                        let mut top = 1;
                        stack[0] = p as u16;
                        marked[p] = true;
                        while top > 0 {
                            top -= 1;
                            let q = stack[top] as usize;
                            count += 1;
                            for m in self.neighbours(q) {
                                match s.color[m] {
                                    BLACK => black = true,
                                    WHITE => white = true,
                                    EMPTY if !marked[m] => {
                                        marked[m] = true;
                                        stack[top] = m as u16;
                                        top += 1;
                                    }
                                    _ => {}
                                }
                            }
                        }
                        if black && !white {
                            delta += count;
                        } else if white && !black {
                            delta -= count;
                        }
                    }
                }
            }
        }
        delta
    }

    /// The bordered point of (row, col).
    #[inline]
    fn point(&self, row: usize, col: usize) -> usize {
        (row + 1) * self.stride + col + 1
    }

    /// The bordered point of a board action.
    #[inline]
    fn point_of(&self, a: usize) -> usize {
        self.point(a / self.n, a % self.n)
    }

    /// The board action of a bordered point.
    #[inline]
    fn action_of(&self, p: usize) -> usize {
        (p / self.stride - 1) * self.n + p % self.stride - 1
    }

    #[inline]
    fn neighbours(&self, p: usize) -> [usize; 4] {
        [p - self.stride, p - 1, p + 1, p + self.stride]
    }

    /// The empty board.
    fn empty_state(&self) -> GoState<P, H> {
        let mut s = GoState {
            color: [GUARD; P],
            head: [0; P],
            next: [0; P],
            size: [0; P],
            libs: [0; P],
            lsum: [0; P],
            lsq: [0; P],
            hash: 0,
            moves: 0,
            ko: 0,
            seen_len: 1,
            to_play: 0,
            passes: 0,
            result: ONGOING,
            superko: false,
            seen: [0; H],
        };
        for r in 0..self.n {
            for c in 0..self.n {
                s.color[self.point(r, c)] = EMPTY;
            }
        }
        s
    }

    /// Whether the chain with head `h` has exactly one liberty: its n pseudo-liberties
    /// q_1..q_n are all one point exactly when n * sum(q_i^2) = (sum q_i)^2 (equality in
    /// Cauchy-Schwarz), OpenSpiel's test, here without overflow.
    #[inline]
    fn in_atari(&self, s: &GoState<P, H>, h: usize) -> bool {
        let sum = s.lsum[h] as u64;
        s.libs[h] as u64 * s.lsq[h] as u64 == sum * sum
    }

    /// Whether `c` may play on the empty, non-ko point `p` whose neighbours are all stones or
    /// guards: it must join an own chain that keeps another liberty or capture an enemy one.
    #[inline]
    fn legal_surrounded(&self, s: &GoState<P, H>, p: usize, c: u8) -> bool {
        self.neighbours(p).iter().any(|&m| {
            let col = s.color[m];
            is_stone(col) && (col == c) != self.in_atari(s, s.head[m] as usize)
        })
    }

    /// Whether `c` may place a stone on the bordered point `p` (OpenSpiel's `IsLegalMove`).
    #[inline]
    fn legal_point(&self, s: &GoState<P, H>, p: usize, c: u8) -> bool {
        if s.color[p] != EMPTY || p == s.ko as usize {
            return false;
        }
        let nb = self.neighbours(p);
        if nb.iter().any(|&m| s.color[m] == EMPTY) {
            return true;
        }
        let opp = c ^ 3;
        nb.iter()
            .any(|&m| s.color[m] == c && !self.in_atari(s, s.head[m] as usize))
            || nb
                .iter()
                .any(|&m| s.color[m] == opp && self.in_atari(s, s.head[m] as usize))
    }

    /// Adds the stone `c` at `p` to the chains (joining its neighbours' chains, the smaller
    /// into the larger), its colour and hash, and takes `p` from the neighbours' liberties.
    /// Captures nothing.
    fn place(&self, s: &mut GoState<P, H>, p: usize, c: u8) {
        let nb = self.neighbours(p);
        let mut base = 0usize;
        let mut largest = 0u16;
        for &m in &nb {
            if s.color[m] == c {
                let h = s.head[m] as usize;
                if s.size[h] > largest {
                    largest = s.size[h];
                    base = h;
                }
            }
        }
        if largest == 0 {
            s.head[p] = p as u16;
            s.next[p] = p as u16;
            s.size[p] = 1;
            s.libs[p] = 0;
            s.lsum[p] = 0;
            s.lsq[p] = 0;
            base = p;
        } else {
            for &m in &nb {
                if s.color[m] != c {
                    continue;
                }
                let h = s.head[m] as usize;
                if h == base {
                    continue;
                }
                s.size[base] += s.size[h];
                s.libs[base] += s.libs[h];
                s.lsum[base] += s.lsum[h];
                s.lsq[base] += s.lsq[h];
                let mut cur = h;
                loop {
                    s.head[cur] = base as u16;
                    cur = s.next[cur] as usize;
                    if cur == h {
                        break;
                    }
                }
                s.next.swap(base, h);
            }
            s.next[p] = s.next[base];
            s.next[base] = p as u16;
            s.head[p] = base as u16;
            s.size[base] += 1;
        }
        for &m in &nb {
            if s.color[m] == EMPTY {
                s.libs[base] += 1;
                s.lsum[base] += m as u32;
                s.lsq[base] += (m * m) as u32;
            }
        }
        s.color[p] = c;
        s.hash ^= self.zobrist[p][(c - 1) as usize];
        for &m in &nb {
            if is_stone(s.color[m]) {
                let h = s.head[m] as usize;
                s.libs[h] -= 1;
                s.lsum[h] -= p as u32;
                s.lsq[h] -= (p * p) as u32;
            }
        }
    }

    /// Removes the chain with head `h`, giving its points back as liberties.
    fn remove_chain(&self, s: &mut GoState<P, H>, h: usize) {
        let col = s.color[h];
        let z = (col - 1) as usize;
        let mut cur = h;
        loop {
            let next = s.next[cur] as usize;
            s.color[cur] = EMPTY;
            s.hash ^= self.zobrist[cur][z];
            for m in self.neighbours(cur) {
                if is_stone(s.color[m]) && s.head[m] as usize != h {
                    let mh = s.head[m] as usize;
                    s.libs[mh] += 1;
                    s.lsum[mh] += cur as u32;
                    s.lsq[mh] += (cur * cur) as u32;
                }
            }
            cur = next;
            if cur == h {
                break;
            }
        }
    }

    /// Plays the legal stone `c` at `p`: places it, captures, sets the ko point.
    fn play(&self, s: &mut GoState<P, H>, p: usize, c: u8) {
        let opp = c ^ 3;
        let nb = self.neighbours(p);
        let in_enemy_eye = nb.iter().all(|&m| s.color[m] == opp || s.color[m] == GUARD);
        self.place(s, p, c);
        let mut captured = 0u32;
        let mut last = 0usize;
        for &m in &nb {
            if s.color[m] == opp && s.libs[s.head[m] as usize] == 0 {
                let h = s.head[m] as usize;
                captured += s.size[h] as u32;
                last = h;
                self.remove_chain(s, h);
            }
        }
        s.ko = if in_enemy_eye && captured == 1 {
            last as u16
        } else {
            0
        };
        debug_assert!(s.libs[s.head[p] as usize] > 0, "suicide played at {p}");
    }

    /// The result of a finished game, by the score (not a repetition).
    fn scored(&self, s: &GoState<P, H>) -> u8 {
        let diff = 2 * self.area_difference(s) - self.komi2;
        match diff.cmp(&0) {
            std::cmp::Ordering::Greater => BLACK_WINS,
            std::cmp::Ordering::Less => WHITE_WINS,
            std::cmp::Ordering::Equal => DRAW,
        }
    }

    /// A state from a board (colour codes in action order), the side to move, the ko action
    /// and the passes; move count 0 and the board as the only one seen. `Err` says why no
    /// position of this game looks so.
    fn state_of_parts(
        &self,
        board: &[u8],
        to_play: u8,
        ko: Option<usize>,
        passes: u8,
    ) -> Result<GoState<P, H>, String> {
        let mut s = self.empty_state();
        for (a, &c) in board.iter().enumerate() {
            match c {
                EMPTY => {}
                BLACK | WHITE => self.place(&mut s, self.point_of(a), c),
                other => return Err(format!("point code {other} at {a} is not 0, 1 or 2")),
            }
        }
        for r in 0..self.n {
            for c in 0..self.n {
                let p = self.point(r, c);
                if is_stone(s.color[p]) && s.libs[s.head[p] as usize] == 0 {
                    return Err(format!("the chain at {} has no liberty", vertex_name(r, c)));
                }
            }
        }
        if passes > 2 {
            return Err(format!("{passes} consecutive passes; allowed: 0, 1, 2"));
        }
        if let Some(a) = ko {
            let (r, c) = (a / self.n, a % self.n);
            if a >= self.n * self.n {
                return Err(format!("ko point {a} is off the board"));
            }
            if passes > 0 {
                return Err("a ko point right after a pass (a pass clears it)".into());
            }
            let p = self.point_of(a);
            let last_mover = BLACK + (to_play ^ 1);
            if s.color[p] != EMPTY
                || !self
                    .neighbours(p)
                    .iter()
                    .all(|&m| s.color[m] == last_mover || s.color[m] == GUARD)
            {
                return Err(format!(
                    "ko point {} is not an empty point surrounded by the last mover's stones",
                    vertex_name(r, c)
                ));
            }
            s.ko = p as u16;
        }
        s.to_play = to_play;
        s.passes = passes;
        s.seen[0] = s.hash;
        if passes >= 2 {
            s.result = self.scored(&s);
        }
        Ok(s)
    }

    fn side_char(to_play: u8) -> char {
        if to_play == 0 { 'x' } else { 'o' }
    }
}

impl<const P: usize, const H: usize, const K: usize> Game for Go<P, H, K> {
    type State = GoState<P, H>;
    type Key = GoKey<K>;

    fn variant(&self) -> String {
        let mut v = format!("go:{}x{}", self.n, self.n);
        if self.komi2 != 15 {
            if self.komi2 % 2 == 0 {
                v += &format!(",komi={}", self.komi2 / 2);
            } else {
                v += &format!(",komi={}", self.komi2 as f64 / 2.0);
            }
        }
        if self.max_moves as usize != 2 * self.n * self.n {
            v += &format!(",max_moves={}", self.max_moves);
        }
        v
    }

    fn num_actions(&self) -> usize {
        self.n * self.n + 1
    }

    fn initial_state(&self) -> GoState<P, H> {
        self.empty_state()
    }

    #[inline]
    fn turn(&self, s: &GoState<P, H>) -> Turn {
        match s.result {
            ONGOING => Turn::Player(Player::from_index(s.to_play as usize)),
            BLACK_WINS => Turn::Terminal(GameResult::Win(Player::P0)),
            WHITE_WINS => Turn::Terminal(GameResult::Win(Player::P1)),
            _ => Turn::Terminal(GameResult::Draw),
        }
    }

    fn legal_actions(&self, s: &GoState<P, H>, out: &mut Vec<Action>) {
        out.clear();
        if s.result != ONGOING {
            return;
        }
        let c = BLACK + s.to_play;
        // Sixteen points at a time: a byte per point, bit 0 of each byte set where the point
        // is empty (colour 0: neither of its two low bits set).
        const LOW: u128 = 0x0101_0101_0101_0101_0101_0101_0101_0101;
        let empty = |at: usize| -> u128 {
            let x = u128::from_le_bytes(s.color[at..at + 16].try_into().expect("16 bytes"));
            !(x | x >> 1) & LOW
        };
        let ko = s.ko as usize;
        // Every action is written, and the count advances past the legal ones only (no
        // data-dependent branch per point).
        let nn = self.n * self.n;
        out.resize(nn + 1, 0);
        let mut len = 0;
        for r in 0..self.n {
            let row = (r + 1) * self.stride + 1;
            let mut c0 = 0;
            while c0 < self.n {
                let p = row + c0;
                let width = (self.n - c0).min(16);
                let mut here = empty(p);
                if width < 16 {
                    here &= (1u128 << (8 * width)) - 1;
                }
                if ko >= p && ko < p + 16 {
                    here &= !(1u128 << (8 * (ko - p)));
                }
                let open =
                    empty(p - self.stride) | empty(p + self.stride) | empty(p - 1) | empty(p + 1);
                let mut legal = here & open;
                // Surrounded empty points: the slow test.
                let mut closed = here & !open;
                while closed != 0 {
                    let i = closed.trailing_zeros() as usize / 8;
                    if self.legal_surrounded(s, p + i, c) {
                        legal |= 1u128 << (8 * i);
                    }
                    closed &= closed - 1;
                }
                let a0 = r * self.n + c0;
                for i in 0..width {
                    out[len] = (a0 + i) as Action;
                    len += (legal >> (8 * i)) as usize & 1;
                }
                c0 += 16;
            }
        }
        out[len] = nn as Action;
        out.truncate(len + 1);
    }

    /// By rejection: an action drawn uniformly among all N*N + 1, again while it is not
    /// legal. Pass is always legal, so the draws end, and every legal action is equally
    /// likely (the accepted draw is uniform over the legal set). A point's test is a few
    /// loads where listing the legal moves is a scan of the board (docs/games.md, "Go").
    fn random_action(
        &self,
        s: &GoState<P, H>,
        _: &mut Vec<Action>,
        index: &mut dyn FnMut(usize) -> usize,
    ) -> Action {
        debug_assert!(s.result == ONGOING, "random_action on a finished game");
        let nn = self.n * self.n;
        let c = BLACK + s.to_play;
        loop {
            let a = index(nn + 1);
            if a == nn || self.legal_point(s, self.point_of(a), c) {
                return a as Action;
            }
        }
    }

    #[inline]
    fn apply(&self, s: &GoState<P, H>, a: Action) -> GoState<P, H> {
        let mut t = *s;
        self.apply_in_place(&mut t, a);
        t
    }

    fn apply_in_place(&self, t: &mut GoState<P, H>, a: Action) {
        debug_assert!(t.result == ONGOING, "apply on a finished game");
        let a = a as usize;
        if a == self.n * self.n {
            t.passes += 1;
            t.ko = 0;
        } else {
            let p = self.point_of(a);
            let c = BLACK + t.to_play;
            debug_assert!(self.legal_point(t, p, c), "illegal {a}");
            self.play(t, p, c);
            t.passes = 0;
            let seen = t.seen_len as usize;
            if t.seen[..seen].contains(&t.hash) {
                t.superko = true;
            } else if seen < H {
                t.seen[seen] = t.hash;
                t.seen_len += 1;
            }
        }
        t.moves += 1;
        t.to_play ^= 1;
        if t.superko {
            t.result = DRAW;
        } else if t.passes >= 2 || t.moves >= self.max_moves {
            t.result = self.scored(t);
        }
    }

    fn chance_outcomes(&self, _: &GoState<P, H>, out: &mut Vec<ChanceOutcome>) {
        out.clear();
    }

    fn apply_chance(&self, s: &GoState<P, H>, _: Outcome) -> GoState<P, H> {
        debug_assert!(false, "Go has no chance states");
        *s
    }

    fn key(&self, s: &GoState<P, H>) -> GoKey<K> {
        let mut k = [0u64; K];
        let mut bit = 0;
        for r in 0..self.n {
            for c in 0..self.n {
                let code = match s.color[self.point(r, c)] {
                    BLACK => 1u64,
                    WHITE => 2,
                    _ => 0,
                };
                k[bit / 64] |= code << (bit % 64);
                bit += 2;
            }
        }
        let ko = if s.ko == 0 {
            0
        } else {
            self.action_of(s.ko as usize) as u64 + 1
        };
        let tail = s.to_play as u64 | ko << 1 | (s.passes.min(2) as u64) << 10;
        // The 12 tail bits may straddle a word.
        k[bit / 64] |= tail << (bit % 64);
        if bit % 64 > 52 {
            k[bit / 64 + 1] |= tail >> (64 - bit % 64);
        }
        GoKey(k)
    }

    fn state_from_key(&self, key: GoKey<K>) -> Result<GoState<P, H>, GameError> {
        let bad = |reason: String| GameError::bad_key(self.variant(), key, reason);
        let key = key.0;
        let bits = |at: usize, width: usize| -> u64 {
            let lo = key[at / 64] >> (at % 64);
            let v = if at % 64 + width > 64 {
                lo | key[at / 64 + 1] << (64 - at % 64)
            } else {
                lo
            };
            v & ((1u64 << width) - 1)
        };
        let points = self.n * self.n;
        let used = 2 * points + 12;
        for (i, w) in key.iter().enumerate() {
            let from = used.saturating_sub(64 * i).min(64);
            if from < 64 && w >> from != 0 {
                return Err(bad(format!("bits from bit {used} on must be 0")));
            }
        }
        let board: Vec<u8> = (0..points).map(|a| bits(2 * a, 2) as u8).collect();
        let to_play = bits(2 * points, 1) as u8;
        let ko = bits(2 * points + 1, 9) as usize;
        let passes = bits(2 * points + 10, 2) as u8;
        let ko = (ko > 0).then(|| ko - 1);
        self.state_of_parts(&board, to_play, ko, passes)
            .map_err(bad)
    }

    fn action_name(&self, _: &GoState<P, H>, a: Action) -> String {
        let a = a as usize;
        if a >= self.n * self.n {
            "pass".to_string()
        } else {
            vertex_name(a / self.n, a % self.n)
        }
    }

    fn outcome_name(&self, _: &GoState<P, H>, o: Outcome) -> String {
        format!("outcome {o} (Go has no chance)")
    }

    fn render(&self, s: &GoState<P, H>) -> String {
        const COLS: &str = "ABCDEFGHJKLMNOPQRST";
        let letters: String = COLS[..self.n].chars().map(|c| format!(" {c}")).collect();
        let mut out = format!("   {letters}\n");
        for r in (0..self.n).rev() {
            out += &format!("{:>2} ", r + 1);
            for c in 0..self.n {
                let p = self.point(r, c);
                out.push(' ');
                out.push(match s.color[p] {
                    BLACK => 'X',
                    WHITE => 'O',
                    _ if p == s.ko as usize => '*',
                    _ => '.',
                });
            }
            out += &format!(" {:>2}\n", r + 1);
        }
        out += &format!("   {letters}\n");
        let status = match self.turn(s) {
            Turn::Player(Player::P0) => "X (black) to move".to_string(),
            Turn::Player(Player::P1) => "O (white) to move".to_string(),
            Turn::Terminal(r) if s.superko => format!("over: {r} (the board repeated)"),
            Turn::Terminal(r) => format!(
                "over: {r} (area black - white = {}, komi {})",
                self.area_difference(s),
                self.komi()
            ),
            Turn::Chance => unreachable!("Go has no chance"),
        };
        out += &format!(
            "{status}; move {} of {}{}\n",
            s.moves,
            self.max_moves,
            if s.passes == 1 {
                "; the last move was a pass"
            } else {
                ""
            }
        );
        out
    }

    fn notation(&self, s: &GoState<P, H>) -> String {
        let mut rows = Vec::with_capacity(self.n);
        for r in (0..self.n).rev() {
            let row: String = (0..self.n)
                .map(|c| match s.color[self.point(r, c)] {
                    BLACK => 'x',
                    WHITE => 'o',
                    _ => '.',
                })
                .collect();
            rows.push(row);
        }
        let mut out = format!("{} {}", rows.join("/"), Self::side_char(s.to_play));
        if s.ko != 0 {
            let a = self.action_of(s.ko as usize);
            out += &format!(" ko={}", vertex_name(a / self.n, a % self.n));
        }
        if s.passes > 0 {
            out += &format!(" passes={}", s.passes.min(2));
        }
        out
    }

    fn parse_notation(&self, text: &str) -> Result<GoState<P, H>, GameError> {
        let bad = |reason: String| GameError::bad_position(self.variant(), text, reason);
        let mut parts = text.split_whitespace();
        let rows = parts.next().ok_or_else(|| {
            bad("empty; expected `<rows> <side>[ ko=<vertex>][ passes=<1|2>]`".into())
        })?;
        let rows: Vec<&str> = rows.split('/').collect();
        if rows.len() != self.n {
            return Err(bad(format!(
                "{} rows; a {n}x{n} board has {n}, separated by `/`",
                rows.len(),
                n = self.n
            )));
        }
        let mut board = vec![EMPTY; self.n * self.n];
        for (i, row) in rows.iter().enumerate() {
            let r = self.n - 1 - i;
            if row.chars().count() != self.n {
                return Err(bad(format!(
                    "row {} has {} points; expected {}",
                    r + 1,
                    row.chars().count(),
                    self.n
                )));
            }
            for (c, ch) in row.chars().enumerate() {
                board[r * self.n + c] = match ch {
                    '.' => EMPTY,
                    'x' => BLACK,
                    'o' => WHITE,
                    other => {
                        return Err(bad(format!("`{other}` in row {}; allowed: . x o", r + 1)));
                    }
                };
            }
        }
        let to_play = match parts.next() {
            Some("x") => 0,
            Some("o") => 1,
            other => {
                return Err(bad(format!(
                    "side to move {other:?}; expected x (black) or o (white)"
                )));
            }
        };
        let (mut ko, mut passes) = (None, 0u8);
        let mut last_field = 0;
        for field in parts {
            let (order, ok) = if let Some(v) = field.strip_prefix("ko=") {
                let (r, c) = parse_vertex(v, self.n)
                    .ok_or_else(|| bad(format!("ko point `{v}` is not a vertex of the board")))?;
                ko = Some(r * self.n + c);
                (1, true)
            } else if let Some(v) = field.strip_prefix("passes=") {
                passes = match v {
                    "1" => 1,
                    "2" => 2,
                    _ => return Err(bad(format!("passes={v}; allowed: 1 or 2"))),
                };
                (2, true)
            } else {
                (0, false)
            };
            if !ok || order <= last_field {
                return Err(bad(format!(
                    "unexpected `{field}`; after the side come ko=<vertex> then passes=<1|2>, \
                     each at most once"
                )));
            }
            last_field = order;
        }
        self.state_of_parts(&board, to_play, ko, passes)
            .map_err(bad)
    }
}

#[cfg(test)]
mod tests;
