//! The perfect index of reduced Chinese Checkers ([`CheckersIndex`]), for the layered solver
//! (the trait and its invariants: [`PerfectIndex`]; design in `docs/solver.md`, "A perfect
//! index"). One level; the 2p checkers (ids matter) sit on distinct squares, so a position is a
//! partial permutation of the n squares: rank = 2 x (its rank among the n!/(n-2p)! partial
//! permutations) + side to move. It works on the game's key (6 bits per checker square, then
//! the side bit).

use super::Checkers;
use crate::game::Game;
use crate::solver::index::PerfectIndex;

/// The perfect index of reduced Chinese Checkers (see the module docs).
#[derive(Clone, Debug)]
pub(crate) struct CheckersIndex {
    /// Squares of the board.
    squares: u32,
    /// Checkers per side.
    per_side: u32,
    /// 2 x squares! / (squares - 2 per_side)!.
    size: u64,
}

impl CheckersIndex {
    /// The index of a board of `squares` squares with `per_side` checkers a side.
    pub(super) fn new(squares: u32, per_side: u32) -> CheckersIndex {
        let k = 2 * per_side;
        let size = (0..k).fold(2u64, |acc, i| acc.saturating_mul((squares - i) as u64));
        CheckersIndex {
            squares,
            per_side,
            size,
        }
    }

    /// The rank of a checkers key (6 bits per checker square, then the side bit).
    pub(super) fn rank_key(&self, key: u128) -> u64 {
        let k = 2 * self.per_side;
        let mut used = 0u64;
        let mut rank = 0u64;
        for i in 0..k {
            let sq = ((key >> (6 * i)) & 63) as u32;
            let below = (used & ((1u64 << sq) - 1)).count_ones();
            rank = rank * (self.squares - i) as u64 + (sq - below) as u64;
            used |= 1u64 << sq;
        }
        2 * rank + ((key >> (6 * k)) & 1) as u64
    }

    /// The key of rank `r`.
    pub(super) fn unrank_key(&self, r: u64) -> Option<u128> {
        if r >= self.size {
            return None;
        }
        let k = 2 * self.per_side as usize;
        let side = r & 1;
        let mut rest = r >> 1;
        let mut digits = [0u32; 64];
        for i in (0..k).rev() {
            let base = (self.squares - i as u32) as u64;
            digits[i] = (rest % base) as u32;
            rest /= base;
        }
        let mut used = 0u64;
        let mut key = 0u128;
        for (i, &d) in digits[..k].iter().enumerate() {
            // The d-th unused square.
            let mut free = !used;
            for _ in 0..d {
                free &= free - 1;
            }
            let sq = free.trailing_zeros();
            used |= 1u64 << sq;
            key |= (sq as u128) << (6 * i);
        }
        Some(key | (side as u128) << (6 * k))
    }
}

impl PerfectIndex<Checkers> for CheckersIndex {
    fn level_size(&self, level: u32) -> u64 {
        if level == 0 { self.size } else { 0 }
    }

    #[inline]
    fn rank(&self, g: &Checkers, s: &<Checkers as Game>::State) -> u64 {
        self.rank_key(g.key(s))
    }

    fn unrank(&self, g: &Checkers, level: u32, r: u64) -> Option<<Checkers as Game>::State> {
        if level != 0 {
            return None;
        }
        g.state_from_key(self.unrank_key(r)?).ok()
    }
}
