//! Perfect indices: a ranking of every decision position of a level onto a dense integer, so
//! the layered solver finds a successor's slot by arithmetic instead of a search.
//!
//! Design in `docs/solver.md` ("A perfect index"). A [`PerfectIndex`] maps each well-formed
//! position of a level to a distinct rank below [`PerfectIndex::level_size`], and back. It is
//! *perfect* (a bijection onto `0..level_size` between well-formed positions and ranks) but not
//! *minimal* over the reachable set: some well-formed positions are never reached in play. The
//! ranks are combinatorial, so the rank space is only a little larger than the reachable set
//! (`cdc:PPPP`: 251,068 ranks for 194,933 reachable decision positions).
//!
//! Each game that the layered solver takes implements its index beside its rules, working on
//! the game's key (which holds the whole position), so the game keeps its state layout
//! private: Chinese dark chess 2x4 in `games::cdc::index`, reduced Chinese Checkers in
//! `games::checkers::index`.

use crate::game::Game;

/// A ranking of each level's decision positions onto `0..level_size(level)`.
///
/// Invariants (tested on every reachable position of the small variants): `rank` of a
/// decision position of level `l` is below `level_size(l)`; `unrank(l, rank(s))` has the key
/// of `s`; distinct keys have distinct ranks.
pub trait PerfectIndex<G: Game>: Send + Sync {
    /// The size of `level`'s rank space (0 for a level above the game's top).
    fn level_size(&self, level: u32) -> u64;
    /// The rank of decision position `s` within its level.
    fn rank(&self, g: &G, s: &G::State) -> u64;
    /// The position of rank `r` in `level` (fresh draw counters), or `None` when no
    /// well-formed position has it.
    fn unrank(&self, g: &G, level: u32, r: u64) -> Option<G::State>;
}
