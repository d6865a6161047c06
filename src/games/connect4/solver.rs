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
//! The game's own layout ([`super`]): column c at bits `c*(H+1)..`, one empty
//! sentinel bit on top of each column; `current` holds the side to move's stones, `mask`
//! all stones, and the key `current + mask` identifies the position. The search is compiled
//! once per board height (a const parameter), so every shift of the threat detection is a
//! constant.
//!
//! # Transposition tables
//! Two tables (docs/solver.md, "Connect Four 7x6"): nodes within [`NEAR_LEFT`] stones of a
//! full board, the great majority and each searched briefly, use a small table that stays in
//! the processor's cache; the rest use the large one, whose probes mostly go to memory.
//!
//! Slot `key mod size`, `size` a prime just above 2^bits. An entry is one machine word holding
//! the quotient `key / size` and a 7-bit bound, so a probe is a single memory access; slot and
//! quotient together give back the whole key, so an entry never answers for another position.
//! The word is 32 bits when the quotient fits in 25 (7x6 with the default 2^24 slots: keys of
//! 49 bits), 64 bits otherwise (always in the small table). Boards whose keys need more than
//! `32 + bits` bits are refused.
//!
//! A search's answer is exact whatever the table holds (it only stores proven bounds), so one
//! solver can be reused across positions; the node count depends on what it holds.

use std::cell::RefCell;

use super::{C4State, ConnectFour};
use crate::game::{Action, Game};

/// Bits of the table's size (a prime just above 2^this).
pub const DEFAULT_TABLE_BITS: u32 = 24;

/// Nodes with at most this many empty squares use the small table.
const NEAR_LEFT: i32 = 20;

/// Bits of the small table's size (at most the large table's): 2^18 entries of 8 bytes, 2 MiB.
/// Its slot is a multiplicative hash of the key (no division) and its entry holds the whole
/// key (keys have at most 56 bits, entries 57 for it), so it never answers for another
/// position either.
const NEAR_BITS: u32 = 18;

/// Fibonacci hashing's multiplier (2^64 / the golden ratio, odd).
const NEAR_MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

/// Bits of a bound in a table entry. Bounds are encoded in `1..=2 * (max - min) + 2`, at most
/// 102 on any board the search takes (56 cells: scores -25..=25).
const VALUE_BITS: u32 = 7;

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

/// A table entry: quotient (tag) and bound in one word (module docs).
trait Entry: Copy + Default + Send + 'static {
    /// Bits left for the quotient.
    const TAG_BITS: u32;
    fn pack(tag: u64, value: u32) -> Self;
    /// The stored quotient and bound (bound 0: empty).
    fn unpack(self) -> (u64, u32);
}

impl Entry for u32 {
    const TAG_BITS: u32 = 32 - VALUE_BITS;
    #[inline(always)]
    fn pack(tag: u64, value: u32) -> u32 {
        (tag as u32) << VALUE_BITS | value
    }
    #[inline(always)]
    fn unpack(self) -> (u64, u32) {
        (
            u64::from(self >> VALUE_BITS),
            self & ((1 << VALUE_BITS) - 1),
        )
    }
}

impl Entry for u64 {
    const TAG_BITS: u32 = 64 - VALUE_BITS;
    #[inline(always)]
    fn pack(tag: u64, value: u32) -> u64 {
        tag << VALUE_BITS | u64::from(value)
    }
    #[inline(always)]
    fn unpack(self) -> (u64, u32) {
        (self >> VALUE_BITS, (self & ((1 << VALUE_BITS) - 1)) as u32)
    }
}

/// The search of one board height `H` with table entries `E`.
struct Search<const H: usize, E> {
    w: usize,
    bottom: u64,
    board: u64,
    /// Column masks in column order, and in search order (centre first).
    columns: [u64; 16],
    ordered: [u64; 16],
    cells: i32,
    min_score: i32,
    max_score: i32,
    table: Vec<E>,
    size: u64,
    /// floor(2^64 / size), for the slot's remainder without a division.
    reciprocal: u64,
    /// The small table of the nodes near the end ([`NEAR_LEFT`]), 2^`near_bits` entries.
    near: Vec<u64>,
    near_bits: u32,
    /// Whether this processor has the `popcnt` instruction (the move ordering counts bits).
    popcnt: bool,
    nodes: u64,
}

/// What `C4Solver` asks of its search, whatever its height and entry width.
trait Searcher: Send {
    fn score(&mut self, key: u64) -> i32;
    fn move_scores(&mut self, key: u64) -> Vec<(usize, i32)>;
    #[cfg(test)]
    fn move_signs(&mut self, key: u64) -> Vec<(usize, i32)>;
    fn moves_reaching(&mut self, key: u64, sign: i32) -> Vec<usize>;
    fn nodes(&self) -> u64;
}

/// The exact solver of one board size, with its transposition table.
pub struct C4Solver {
    search: Box<dyn Searcher>,
}

fn is_prime(n: u64) -> bool {
    n >= 2
        && (2..)
            .take_while(|d| d * d <= n)
            .all(|d| !n.is_multiple_of(d))
}

/// The least prime above `n`.
fn prime_above(n: u64) -> u64 {
    (n + 1..).find(|&m| is_prime(m)).expect("a prime above n")
}

impl C4Solver {
    /// A solver for `game`'s board with a table of about 2^`table_bits` entries (4 bytes
    /// each on 7x6 with 24 or more bits, otherwise 8).
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
        let size = prime_above(1 << table_bits);
        let near_bits = NEAR_BITS.min(table_bits);
        // The largest quotient of a key of `bits` bits decides the entry's width.
        let narrow = (u64::MAX >> (64 - bits)) / size < 1 << <u32 as Entry>::TAG_BITS;
        macro_rules! by_height {
            ($($hh:literal)*) => {
                match (h, narrow) {
                    $(
                        ($hh, true) => Box::new(Search::<$hh, u32>::new(w, size, near_bits))
                            as Box<dyn Searcher>,
                        ($hh, false) => Box::new(Search::<$hh, u64>::new(w, size, near_bits)),
                    )*
                    // `ConnectFour::new` takes heights 4..=15 only.
                    _ => unreachable!("c4 height {h} passed the key-size check"),
                }
            };
        }
        let search = by_height!(4 5 6 7 8 9 10 11 12 13 14 15);
        Ok(C4Solver { search })
    }

    /// Nodes searched since the solver was made.
    pub fn nodes(&self) -> u64 {
        self.search.nodes()
    }

    /// The exact score of the non-terminal position with game key `key`, for its side to move.
    pub fn score(&mut self, key: u64) -> i32 {
        self.search.score(key)
    }

    /// Every legal column (0-based, ascending) of the non-terminal position with game key
    /// `key`, with its exact score for the side to move.
    pub fn move_scores(&mut self, key: u64) -> Vec<(usize, i32)> {
        self.search.move_scores(key)
    }

    /// Every legal column (0-based, ascending) of the non-terminal position with game key
    /// `key`, with the sign of its exact score for the side to move (1 win, 0 draw, -1 loss):
    /// a weak solve of each child.
    #[cfg(test)]
    pub(crate) fn move_signs(&mut self, key: u64) -> Vec<(usize, i32)> {
        self.search.move_signs(key)
    }

    /// The legal columns (0-based, ascending) of the non-terminal position with game key `key`
    /// whose exact value for the side to move is at least `sign` (1 win, 0 draw, -1 loss):
    /// given the position's own sign, its optimal moves, at one null-window search per child
    /// (where [`C4Solver::move_signs`] takes up to two).
    pub fn moves_reaching(&mut self, key: u64, sign: i32) -> Vec<usize> {
        self.search.moves_reaching(key, sign.clamp(-1, 1))
    }
}

/// A zeroed table of `len` entries, backed by transparent huge pages where the kernel offers
/// them on request: the probes land anywhere in tens of megabytes, and with 4 KiB pages
/// nearly every probe also misses the TLB (docs/solver.md, "Connect Four 7x6").
fn huge_page_table<E: Entry>(len: usize) -> Vec<E> {
    // Zeroed memory this large comes from fresh, untouched pages, so the advice is taken
    // before the first fault.
    let mut table = vec![E::default(); len];
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let start = table.as_mut_ptr() as usize;
        let end = start + std::mem::size_of_val(table.as_slice());
        let first = start.next_multiple_of(PAGE);
        if end > first + PAGE {
            let len = (end - first) / PAGE * PAGE;
            // SAFETY: madvise only advises the kernel about pages of this live allocation
            // (the range lies inside it); it changes neither their contents nor their
            // validity. A refusal (no THP support) is harmless.
            unsafe {
                libc::madvise(first as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
            }
        }
    }
    table
}

impl<const H: usize, E: Entry> Search<H, E> {
    fn new(w: usize, size: u64, near_bits: u32) -> Search<H, E> {
        let mut bottom = 0u64;
        let mut columns = [0u64; 16];
        for (c, col) in columns.iter_mut().enumerate().take(w) {
            bottom |= 1u64 << (c * (H + 1));
            *col = ((1u64 << H) - 1) << (c * (H + 1));
        }
        // Centre first, then alternating outwards, left before right.
        let mut order: Vec<usize> = (0..w).collect();
        order.sort_by_key(|&c| ((2 * c as i64 - (w as i64 - 1)).abs(), c));
        let mut ordered = [0u64; 16];
        for (i, &c) in order.iter().enumerate() {
            ordered[i] = columns[c];
        }
        let cells = (w * H) as i32;
        Search {
            w,
            bottom,
            board: bottom * ((1u64 << H) - 1),
            columns,
            ordered,
            cells,
            min_score: -cells / 2 + 3,
            max_score: (cells + 1) / 2 - 3,
            table: huge_page_table(size as usize),
            size,
            reciprocal: u64::MAX / size,
            near: huge_page_table(1 << near_bits),
            near_bits,
            #[cfg(target_arch = "x86_64")]
            popcnt: std::arch::is_x86_feature_detected!("popcnt"),
            #[cfg(not(target_arch = "x86_64"))]
            popcnt: false,
            nodes: 0,
        }
    }

    /// The search position of a game key (`current + mask`, see the game's module docs).
    fn position_of_key(&self, key: u64) -> Position {
        let full = (1u64 << (H + 1)) - 1;
        let (mut current, mut mask) = (0u64, 0u64);
        for c in 0..self.w {
            let shift = c * (H + 1);
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
    #[inline(always)]
    fn winning_squares(&self, pos: u64, mask: u64) -> u64 {
        // Vertical.
        let mut r = (pos << 1) & (pos << 2) & (pos << 3);
        // Horizontal, and the two diagonals.
        r |= Self::line(pos, H + 1);
        r |= Self::line(pos, H);
        r |= Self::line(pos, H + 2);
        r & (self.board ^ mask)
    }

    /// Squares completing four along the direction of bit step `d` (a constant once
    /// inlined).
    #[inline(always)]
    fn line(pos: u64, d: usize) -> u64 {
        let p = (pos << d) & (pos << (2 * d));
        let mut r = p & (pos << (3 * d));
        r |= p & (pos >> d);
        let p = (pos >> d) & (pos >> (2 * d));
        r |= p & (pos << d);
        r | p & (pos >> (3 * d))
    }

    #[inline(always)]
    fn possible(&self, p: &Position) -> u64 {
        (p.mask + self.bottom) & self.board
    }

    #[inline(always)]
    fn can_win_next(&self, p: &Position) -> bool {
        self.winning_squares(p.current, p.mask) & self.possible(p) != 0
    }

    /// Playable squares after which the opponent cannot win at once (0 if none).
    #[inline(always)]
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

    #[inline(always)]
    fn play(p: &Position, mv: u64) -> Position {
        Position {
            current: p.current ^ p.mask,
            mask: p.mask | mv,
            moves: p.moves + 1,
        }
    }

    /// `(key mod size, key / size)` of the large table by Barrett reduction: the estimated
    /// quotient is at most one short.
    #[inline(always)]
    fn reduce(&self, key: u64) -> (usize, u64) {
        let mut q = ((u128::from(key) * u128::from(self.reciprocal)) >> 64) as u64;
        let mut r = key - q * self.size;
        if r >= self.size {
            r -= self.size;
            q += 1;
        }
        (r as usize, q)
    }

    /// The slot of `key` in the table of a node with `left` empty squares, and the tag its
    /// entry holds there (the large table's quotient; the small table's whole key).
    #[inline(always)]
    fn slot(&self, key: u64, left: i32) -> (usize, u64) {
        if left <= NEAR_LEFT {
            let slot = key.wrapping_mul(NEAR_MULTIPLIER) >> (64 - self.near_bits);
            (slot as usize, key)
        } else {
            self.reduce(key)
        }
    }

    /// The bound stored for `key` (0: none) of a node with `left` empty squares, with its
    /// slot and quotient for the store that follows.
    #[inline(always)]
    fn probe(&self, key: u64, left: i32) -> (usize, u64, u32) {
        let (slot, tag) = self.slot(key, left);
        let (stored, v) = if left <= NEAR_LEFT {
            self.near[slot].unpack()
        } else {
            self.table[slot].unpack()
        };
        (slot, tag, if stored == tag { v } else { 0 })
    }

    #[inline(always)]
    fn store(&mut self, slot: usize, tag: u64, v: u32, left: i32) {
        if left <= NEAR_LEFT {
            self.near[slot] = <u64 as Entry>::pack(tag, v);
        } else {
            self.table[slot] = E::pack(tag, v);
        }
    }

    /// Starts loading the table entry of `key` (a node with `left` empty squares) into the
    /// cache (no effect on the result).
    #[inline(always)]
    fn prefetch(&self, key: u64, left: i32) {
        #[cfg(target_arch = "x86_64")]
        {
            let (slot, _) = self.slot(key, left);
            let at = if left <= NEAR_LEFT {
                self.near.as_ptr().wrapping_add(slot).cast::<i8>()
            } else {
                self.table.as_ptr().wrapping_add(slot).cast::<i8>()
            };
            // SAFETY: a prefetch is a hint; it reads nothing into the program and cannot
            // fault, and `at` lies inside its table anyway.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (key, left);
    }

    /// The score of `p` if it lies in (alpha, beta), else a bound beyond the window on the
    /// same side (fail-hard). `p`'s side to move cannot win at once (the caller checks).
    fn negamax(&mut self, p: &Position, alpha: i32, beta: i32) -> i32 {
        #[cfg(target_arch = "x86_64")]
        if self.popcnt {
            // SAFETY: the processor has `popcnt` (detected when the search was made).
            return unsafe { self.negamax_popcnt(p, alpha, beta) };
        }
        self.negamax_plain(p, alpha, beta)
    }

    /// The search compiled with the `popcnt` instruction (the move ordering counts the
    /// squares each move threatens; without it a count is a dozen instructions).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn negamax_popcnt(&mut self, p: &Position, alpha: i32, beta: i32) -> i32 {
        self.node::<true>(p, alpha, beta)
    }

    fn negamax_plain(&mut self, p: &Position, alpha: i32, beta: i32) -> i32 {
        self.node::<false>(p, alpha, beta)
    }

    /// A child's search, in the same compilation as its parent's.
    #[inline(always)]
    fn child<const POPCNT: bool>(&mut self, p: &Position, alpha: i32, beta: i32) -> i32 {
        #[cfg(target_arch = "x86_64")]
        if POPCNT {
            // SAFETY: `node::<true>` runs only inside `negamax_popcnt`, which runs only on a
            // processor that has `popcnt`.
            return unsafe { self.negamax_popcnt(p, alpha, beta) };
        }
        self.negamax_plain(p, alpha, beta)
    }

    /// One node of [`Search::negamax`].
    #[inline(always)]
    fn node<const POPCNT: bool>(&mut self, p: &Position, mut alpha: i32, mut beta: i32) -> i32 {
        self.nodes += 1;
        let left = self.cells - p.moves;
        let next = self.non_losing_moves(p);
        if next == 0 {
            return -left / 2;
        }
        if left <= 2 {
            return 0;
        }
        // Two of the mover's winning squares stacked above a playable square: playing there
        // forces the opponent to block the first, and the second wins with the mover's next
        // stone, the best any move can do now (the mover cannot win at once). The square is
        // in `next`, so the opponent's block does not win for them.
        let own = self.winning_squares(p.current, p.mask);
        if next & (own >> 1) & (own >> 2) != 0 {
            return (left - 1) / 2;
        }
        let min = -(left - 2) / 2;
        if alpha < min {
            alpha = min;
            if alpha >= beta {
                return alpha;
            }
        }
        let mut max = (left - 1) / 2;
        let (slot, tag, v) = self.probe(p.current + p.mask, left);
        if v > 0 {
            let v = v as i32;
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
        if beta > max {
            beta = max;
            if alpha >= beta {
                return beta;
            }
        }
        let mut sorter = MoveSorter::new();
        let other = p.current ^ p.mask;
        for i in (0..self.w).rev() {
            let mv = next & self.ordered[i];
            if mv != 0 {
                // The squares the move threatens; one fewer for a move just below one of the
                // mover's own winning squares, which lets the opponent block it.
                let mut score = self.winning_squares(p.current | mv, p.mask).count_ones();
                if own & (mv << 1) != 0 {
                    score = score.saturating_sub(1);
                }
                sorter.add(mv, score);
                // The child's key is `other + (mask | mv)`; its entry is fetched while the
                // siblings are scored and searched.
                self.prefetch(other + (p.mask | mv), left - 1);
            }
        }
        while let Some(mv) = sorter.next() {
            let child = Self::play(p, mv);
            let score = -self.child::<POPCNT>(&child, -beta, -alpha);
            if score >= beta {
                let v = score + self.max_score - 2 * self.min_score + 2;
                self.store(slot, tag, v as u32, left);
                return score;
            }
            if score > alpha {
                alpha = score;
            }
        }
        self.store(slot, tag, (alpha - self.min_score + 1) as u32, left);
        alpha
    }

    /// The exact score of a position (see the module docs).
    fn solve_position(&mut self, p: &Position) -> i32 {
        self.solve_within(p, false)
    }

    /// The exact score, or with `weak` only its sign (the search's window narrowed to
    /// [-1, 1]: win, draw or loss, much cheaper on early positions).
    fn solve_within(&mut self, p: &Position, weak: bool) -> i32 {
        let cells = self.cells;
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

    /// Every legal column (0-based, ascending) of the non-terminal position with game key
    /// `key`, with its exact score for the side to move, or with `weak` only its sign.
    fn moves_within(&mut self, key: u64, weak: bool) -> Vec<(usize, i32)> {
        let p = self.position_of_key(key);
        let cells = self.cells;
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

impl<const H: usize, E: Entry> Search<H, E> {
    /// The legal columns (ascending) of the position with game key `key` whose exact value
    /// for the side to move is at least `sign` (-1, 0 or 1): one null-window search per
    /// child, where telling win, draw and loss apart takes up to two.
    fn moves_reaching_within(&mut self, key: u64, sign: i32) -> Vec<usize> {
        let p = self.position_of_key(key);
        let possible = self.possible(&p);
        let wins = self.winning_squares(p.current, p.mask);
        let mut out = Vec::new();
        for c in 0..self.w {
            let mv = possible & self.columns[c];
            if mv == 0 {
                continue;
            }
            // The mover's value >= sign <=> the child's value for the opponent <= -sign.
            let reaches = wins & mv != 0 || sign < 0 || {
                let child = Self::play(&p, mv);
                !self.can_win_next(&child) && self.negamax(&child, -sign, 1 - sign) <= -sign
            };
            if reaches {
                out.push(c);
            }
        }
        out
    }
}

impl<const H: usize, E: Entry> Searcher for Search<H, E> {
    fn moves_reaching(&mut self, key: u64, sign: i32) -> Vec<usize> {
        self.moves_reaching_within(key, sign)
    }

    fn score(&mut self, key: u64) -> i32 {
        let p = self.position_of_key(key);
        self.solve_position(&p)
    }

    #[cfg(test)]
    fn move_signs(&mut self, key: u64) -> Vec<(usize, i32)> {
        self.moves_within(key, true)
    }

    fn move_scores(&mut self, key: u64) -> Vec<(usize, i32)> {
        self.moves_within(key, false)
    }

    fn nodes(&self) -> u64 {
        self.nodes
    }
}

/// A score to the [-1, 1] value scale (win 1, draw 0, loss -1).
pub fn score_to_value(score: i32) -> f64 {
    f64::from(score.signum())
}

/// Whether the exact search takes `game`'s board with the default table.
pub(crate) fn searchable(game: &ConnectFour) -> bool {
    game.width() * (game.height() + 1) <= 32 + DEFAULT_TABLE_BITS as usize
}

thread_local! {
    /// One solver per thread and board, kept between calls so its table keeps helping.
    static SOLVER: RefCell<Option<((usize, usize), C4Solver)>> = const { RefCell::new(None) };
}

/// Runs `f` on this thread's solver for `g`'s board (made on first use, 2^24 table entries,
/// kept between calls so its table keeps helping); `None` for a board the search does not
/// take.
pub(crate) fn with_thread_solver<R>(
    g: &ConnectFour,
    f: impl FnOnce(&mut C4Solver) -> R,
) -> Option<R> {
    let dims = (g.width(), g.height());
    SOLVER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_none_or(|(d, _)| *d != dims) {
            *slot = Some((dims, C4Solver::new(g, DEFAULT_TABLE_BITS).ok()?));
        }
        let (_, solver) = slot.as_mut()?;
        Some(f(solver))
    })
}

/// Every legal action of decision state `s` with its exact value in [-1, 1] for the mover
/// (win 1, draw 0, loss -1), ascending; `None` for a terminal state or a board the search
/// does not take. Uses this thread's solver ([`with_thread_solver`]).
pub fn action_values(g: &ConnectFour, s: &C4State) -> Option<Vec<(Action, f64)>> {
    if !matches!(g.turn(s), crate::game::Turn::Player(_)) {
        return None;
    }
    with_thread_solver(g, |solver| {
        solver
            .move_scores(g.key(s))
            .into_iter()
            .map(|(c, score)| (c as Action, score_to_value(score)))
            .collect()
    })
}
