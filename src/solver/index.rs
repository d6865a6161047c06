//! Perfect indices: a ranking of every decision position of a level onto a dense integer, so
//! the layered solver finds a successor's slot by arithmetic instead of a search.
//!
//! Design in `docs/solver.md` ("A perfect index"). A [`PerfectIndex`] maps each well-formed
//! position of a level to a distinct rank below [`PerfectIndex::level_size`], and back. It is
//! *perfect* (a bijection onto `0..level_size` between well-formed positions and ranks) but not
//! *minimal* over the reachable set: some well-formed positions are never reached in play. The
//! ranks are combinatorial, so the rank space is only a little larger than the reachable set:
//!
//! | variant | rank space | reachable decision positions |
//! |---|---|---|
//! | `cdc:PPPP` | 251,068 | 194,933 |
//! | `cdc:KPPP` | 2,422,204 | 1,933,965 |
//! | `cdc:GGCC` | 4,580,472 | 4,031,785 |
//!
//! Both rankings here work on the game's key (which holds the whole position), so the games
//! keep their own state layout private.
//!
//! - **Chinese dark chess 2x4** ([`CdcIndex`]): a position is a *class* (the multiset of
//!   revealed pieces on the board and the multiset of face-down pieces, each a mixed-radix
//!   number in the key's own radix) times an arrangement of the class's symbols (empty, face
//!   down, each coloured kind) on the 8 squares, times the colour to move. Classes of a level
//!   are numbered in a fixed order with prefix sums of their sizes. An arrangement is split
//!   between the board's two halves (squares 0-3 and 4-7, 16 key bits each): the first
//!   half's multiset picks a block of the class's arrangements (blocks in a fixed order,
//!   prefix sums of (first half's arrangements) x (second half's)), and within the block the
//!   two halves' ranks among their multisets' arrangements form a mixed-radix number. One
//!   table over the 2^16 half boards gives each half's multiset, rank and arrangement count,
//!   so ranking a key is two table lookups, the class and the block: no loop over squares.
//!   Rank = class offset + 2 x arrangement rank + (black to move). The start position (all
//!   face down, no colour yet) is rank 0 of its level.
//! - **Chinese Checkers** ([`CheckersIndex`]): one level; the 2p checkers (ids matter) sit on
//!   distinct squares, so a position is a partial permutation of the n squares: rank =
//!   2 x (its rank among the n!/(n-2p)! partial permutations) + side to move.

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

/// Squares of the 2x4 board.
const SQUARES: usize = 8;
/// Symbols of a square in the CDC key: 0 empty, 1 face down, 2 + coloured kind.
const SYMBOLS: usize = 16;
const KINDS: usize = 7;
const CKINDS: usize = 14;

/// One class of CDC positions: revealed and face-down multisets (as key radix numbers).
#[derive(Clone, Copy, Debug)]
struct CdcClass {
    /// First rank of the class within its level.
    offset: u64,
    /// The board multiset's index (`revealed * 9 + face-down count`), see [`CdcIndex`].
    board: u32,
    /// The face-down multiset's radix number (the key's aux >> 8).
    hidden: u32,
    /// All pieces face down: the start position, no colour to move yet.
    start: bool,
}

/// One way of splitting a board multiset between the two halves of the board: the first
/// half's multiset `m1`, the second's `m2`, the first arrangement rank (within the board
/// multiset) of the split, and the second half's arrangement count.
#[derive(Clone, Copy, Debug)]
struct Split {
    offset: u32,
    m1: u16,
    m2: u16,
    n2: u32,
}

/// The bit of a half-board entry that marks it well-formed (entries of half boards no
/// position has stay 0, so their pages of the table are never touched).
const HALF_OK: u64 = 1 << 63;

/// The perfect index of 2x4 Chinese dark chess (see the module docs).
#[derive(Clone, Debug)]
pub struct CdcIndex {
    /// Material count of each coloured kind.
    material: [u8; CKINDS],
    /// Number of distinct multisets (the radix's range).
    radix: u32,
    /// `class_of[revealed * radix + hidden]`: (level, offset), or `u32::MAX` level if invalid.
    class_of: Vec<(u32, u64)>,
    /// Classes per level, ascending by offset.
    classes: Vec<Vec<CdcClass>>,
    sizes: Vec<u64>,
    /// `half[h]` for the 16 key bits `h` of four squares (a half board), packed: bits 0-15
    /// the revealed multiset's radix number, 16-31 the half's multiset id, 32-39 the half's
    /// rank among the arrangements of its multiset (ascending `h`), 40-47 that arrangement
    /// count, 48-55 the face-down squares, 63 (`HALF_OK`) set; 0 when a square holds no
    /// symbol of the material or a kind exceeds it.
    half: Vec<u64>,
    /// Number of half-board multisets.
    multisets: usize,
    /// `split_rank[board * multisets + m1]`: the first arrangement rank, within the board
    /// multiset `board`, of the arrangements whose first half has multiset `m1`.
    split_rank: Vec<u32>,
    /// The splits of each board multiset, ascending: `splits[split_start[b]..split_start[b + 1]]`.
    splits: Vec<Split>,
    split_start: Vec<u32>,
    /// The half boards of each multiset by arrangement rank:
    /// `arrangements[arrangement_start[m]..arrangement_start[m + 1]]`.
    arrangements: Vec<u16>,
    arrangement_start: Vec<u32>,
}

/// Board multisets per revealed multiset: one per face-down count 0..=8.
const DOWN_COUNTS: u32 = SQUARES as u32 + 1;

const FACT: [u64; SQUARES + 1] = [1, 1, 2, 6, 24, 120, 720, 5040, 40320];

/// The arrangements of a multiset of square symbols (counts summing to the squares).
fn arrangements_of(counts: &[u8; SYMBOLS]) -> u64 {
    let n: usize = counts.iter().map(|&c| c as usize).sum();
    FACT[n] / counts.iter().map(|&c| FACT[c as usize]).product::<u64>()
}

impl CdcIndex {
    /// The index for the material `KGMRNCP`-letters of one side (e.g. `"GGCC"`).
    pub fn new(material: &str) -> CdcIndex {
        let mut per_kind = [0u8; KINDS];
        for ch in material.chars() {
            if let Some(k) = "KGMRNCP".find(ch.to_ascii_uppercase()) {
                per_kind[k] += 1;
            }
        }
        let mut place = [0u32; CKINDS];
        let mut mat = [0u8; CKINDS];
        let mut radix = 1u32;
        for ck in 0..CKINDS {
            let m = per_kind[ck % KINDS];
            mat[ck] = m;
            if m > 0 {
                place[ck] = radix;
                radix *= m as u32 + 1;
            }
        }
        assert!(
            radix <= 1 << 16,
            "material {material} is too large for the 2x4 board"
        );
        let mut symbol_place = [0u32; SYMBOLS];
        symbol_place[2..].copy_from_slice(&place);
        let pieces: u32 = mat.iter().map(|&m| m as u32).sum();
        let digits = |x: u32| -> [u8; CKINDS] {
            let mut d = [0u8; CKINDS];
            let mut r = x;
            for ck in 0..CKINDS {
                if mat[ck] > 0 {
                    d[ck] = (r % (mat[ck] as u32 + 1)) as u8;
                    r /= mat[ck] as u32 + 1;
                }
            }
            d
        };

        // Half boards: each of the 2^16 values of four squares' nibbles, its multiset (ids in
        // order of first appearance) and its rank among that multiset's arrangements.
        let mut ids: std::collections::BTreeMap<[u8; SYMBOLS], u16> = Default::default();
        let mut ms_counts: Vec<[u8; SYMBOLS]> = Vec::new();
        let mut by_ms: Vec<Vec<u16>> = Vec::new();
        let mut half = vec![0u64; 1 << 16];
        for (h, entry) in half.iter_mut().enumerate() {
            let mut counts = [0u8; SYMBOLS];
            for sq in 0..SQUARES / 2 {
                counts[(h >> (4 * sq)) & 15] += 1;
            }
            let fits = (0..CKINDS).all(|ck| counts[ck + 2] <= mat[ck]);
            if !fits {
                continue;
            }
            let next = ms_counts.len() as u16;
            let m = *ids.entry(counts).or_insert(next);
            if m == next {
                ms_counts.push(counts);
                by_ms.push(Vec::new());
            }
            let arr = by_ms[m as usize].len() as u64;
            by_ms[m as usize].push(h as u16);
            let rev: u32 = (0..SYMBOLS)
                .map(|t| symbol_place[t] * counts[t] as u32)
                .sum();
            *entry = HALF_OK
                | rev as u64
                | (m as u64) << 16
                | arr << 32
                | arrangements_of(&counts) << 40
                | (counts[1] as u64) << 48;
        }
        let multisets = ms_counts.len();
        let mut arrangement_start = vec![0u32];
        let mut arrangements = Vec::new();
        for list in &by_ms {
            arrangements.extend_from_slice(list);
            arrangement_start.push(arrangements.len() as u32);
        }

        // Board multisets (revealed multiset, face-down count): their splits into two halves,
        // first halves in id order.
        let boards = (radix * DOWN_COUNTS) as usize;
        let mut split_rank = vec![u32::MAX; boards * multisets];
        let mut splits = Vec::new();
        let mut split_start = vec![0u32];
        for b in 0..boards {
            let r = digits(b as u32 / DOWN_COUNTS);
            let down = (b as u32 % DOWN_COUNTS) as usize;
            let shown: usize = r.iter().map(|&x| x as usize).sum();
            if down + shown <= SQUARES {
                let mut counts = [0u8; SYMBOLS];
                counts[0] = (SQUARES - down - shown) as u8;
                counts[1] = down as u8;
                counts[2..].copy_from_slice(&r);
                let mut offset = 0u64;
                for (m1, c1) in ms_counts.iter().enumerate() {
                    if (0..SYMBOLS).any(|t| c1[t] > counts[t]) {
                        continue;
                    }
                    let mut c2 = counts;
                    for t in 0..SYMBOLS {
                        c2[t] -= c1[t];
                    }
                    let m2 = ids[&c2];
                    let n2 = arrangements_of(&c2);
                    split_rank[b * multisets + m1] = offset as u32;
                    splits.push(Split {
                        offset: offset as u32,
                        m1: m1 as u16,
                        m2,
                        n2: n2 as u32,
                    });
                    offset += arrangements_of(c1) * n2;
                }
                debug_assert_eq!(offset, arrangements_of(&counts));
            }
            split_start.push(splits.len() as u32);
        }

        let mut class_of = vec![(u32::MAX, 0u64); (radix * radix) as usize];
        let mut classes: Vec<Vec<CdcClass>> = vec![Vec::new(); 2 * SQUARES + 1];
        let mut sizes = vec![0u64; 2 * SQUARES + 1];
        for rev in 0..radix {
            let r = digits(rev);
            for hid in 0..radix {
                let h = digits(hid);
                if (0..CKINDS).any(|ck| r[ck] + h[ck] > mat[ck]) {
                    continue;
                }
                let down: usize = h.iter().map(|&x| x as usize).sum();
                let shown: usize = r.iter().map(|&x| x as usize).sum();
                if down + shown > SQUARES {
                    continue;
                }
                let mut counts = [0u8; SYMBOLS];
                counts[0] = (SQUARES - down - shown) as u8;
                counts[1] = down as u8;
                counts[2..].copy_from_slice(&r);
                let level = 2 * down + shown;
                let start = down as u32 == pieces;
                class_of[(rev * radix + hid) as usize] = (level as u32, sizes[level]);
                classes[level].push(CdcClass {
                    offset: sizes[level],
                    board: rev * DOWN_COUNTS + down as u32,
                    hidden: hid,
                    start,
                });
                sizes[level] += 2 * arrangements_of(&counts);
            }
        }
        CdcIndex {
            material: mat,
            radix,
            class_of,
            classes,
            sizes,
            half,
            multisets,
            split_rank,
            splits,
            split_start,
            arrangements,
            arrangement_start,
        }
    }

    /// The rank of a 2x4 key of a decision position (pending flip 0), with its level.
    /// `None` for keys no well-formed decision position has.
    pub fn rank_key(&self, key: u64) -> Option<(u32, u64)> {
        self.rank_key_checked::<true>(key)
    }

    /// [`CdcIndex::rank_key`]; with `CHECK` false the key is trusted to be one the game
    /// made (its material within the game's, as many face-down squares as face-down
    /// pieces), which the solver's hot loop relies on: two half-board lookups, the class
    /// and the split, no loop.
    #[inline(always)]
    fn rank_key_checked<const CHECK: bool>(&self, key: u64) -> Option<(u32, u64)> {
        let aux = key >> 32;
        if (aux >> 2) & 63 != 0 {
            return None;
        }
        let hidden = aux >> 8;
        if hidden >= self.radix as u64 {
            return None;
        }
        let a = self.half[(key & 0xFFFF) as usize];
        let b = self.half[((key >> 16) & 0xFFFF) as usize];
        let m1 = (a >> 16) & 0xFFFF;
        if CHECK {
            if a & b & HALF_OK == 0 {
                return None;
            }
            let mut counts = [0u8; SYMBOLS];
            for sq in 0..SQUARES {
                counts[((key >> (4 * sq)) & 15) as usize] += 1;
            }
            if (0..CKINDS).any(|ck| counts[ck + 2] > self.material[ck]) {
                return None;
            }
            let mut h = hidden as u32;
            let mut down = 0;
            for ck in 0..CKINDS {
                if self.material[ck] > 0 {
                    down += h % (self.material[ck] as u32 + 1);
                    h /= self.material[ck] as u32 + 1;
                }
            }
            if down != counts[1] as u32 {
                return None;
            }
        }
        let revealed = (a & 0xFFFF) + (b & 0xFFFF);
        let down = ((a >> 48) & 0xFF) + ((b >> 48) & 0xFF);
        let (level, offset) = self.class_of[(revealed * self.radix as u64 + hidden) as usize];
        if level == u32::MAX {
            return None;
        }
        // The arrangement: the split's first rank + the halves' ranks in a mixed radix.
        let board = revealed * DOWN_COUNTS as u64 + down;
        let split = self.split_rank[board as usize * self.multisets + m1 as usize] as u64;
        let rank = split + ((a >> 32) & 0xFF) * ((b >> 40) & 0xFF) + ((b >> 32) & 0xFF);
        let side = match aux & 3 {
            0 => 0,
            1 => 0,
            2 => 1,
            _ => return None,
        };
        Some((level, offset + 2 * rank + side))
    }

    /// The (level, rank) of the key of a decision position the game made, nothing checked:
    /// the solver's hot loop ranks only keys `Cdc::key_expander` wrote (held to the game's own
    /// step by `solver::layered`'s tests). A key no decision position has gets a meaningless
    /// rank (or an out-of-bounds panic), not an error: [`CdcIndex::rank_key`] checks.
    #[inline(always)]
    pub(crate) fn rank_key_unchecked(&self, key: u64) -> (u32, u64) {
        let aux = key >> 32;
        let a = self.half[(key & 0xFFFF) as usize];
        let b = self.half[((key >> 16) & 0xFFFF) as usize];
        let revealed = (a & 0xFFFF) + (b & 0xFFFF);
        let down = ((a >> 48) & 0xFF) + ((b >> 48) & 0xFF);
        let (level, offset) = self.class_of[(revealed * self.radix as u64 + (aux >> 8)) as usize];
        let board = revealed * DOWN_COUNTS as u64 + down;
        let m1 = (a >> 16) & 0xFFFF;
        let split = self.split_rank[board as usize * self.multisets + m1 as usize] as u64;
        let rank = split + ((a >> 32) & 0xFF) * ((b >> 40) & 0xFF) + ((b >> 32) & 0xFF);
        // Colour to move: 1 red, 2 black (0, the start, has rank 0 in its class).
        (level, offset + 2 * rank + ((aux >> 1) & 1))
    }

    /// The size of `level`'s rank space (0 above the top).
    pub fn level_size_of(&self, level: u32) -> u64 {
        self.sizes.get(level as usize).copied().unwrap_or(0)
    }

    /// The key of rank `r` in `level`, or `None` outside the rank space (or the start
    /// position with a colour to move).
    pub fn unrank_key(&self, level: u32, r: u64) -> Option<u64> {
        self.unrank_key_near(level, r, &mut UnrankHint::default())
    }

    /// [`CdcIndex::unrank_key`], starting the class and block searches where `hint` says
    /// (updated to the ones found): ascending ranks mostly stay in one class and one block,
    /// so a run of them skips both searches.
    #[inline(always)]
    pub(crate) fn unrank_key_near(&self, level: u32, r: u64, hint: &mut UnrankHint) -> Option<u64> {
        let classes = self.classes.get(level as usize)?;
        if r >= self.sizes[level as usize] {
            return None;
        }
        let fits = |i: usize| {
            i < classes.len()
                && classes[i].offset <= r
                && classes.get(i + 1).is_none_or(|c| r < c.offset)
        };
        let i = if fits(hint.class) {
            hint.class
        } else if fits(hint.class + 1) {
            hint.class + 1
        } else {
            classes.partition_point(|c| c.offset <= r) - 1
        };
        let class = &classes[i];
        let local = r - class.offset;
        let side_bit = local & 1;
        let rank = (local >> 1) as u32;
        let b = class.board as usize;
        let (first, end) = (
            self.split_start[b] as usize,
            self.split_start[b + 1] as usize,
        );
        let in_split = |j: usize| {
            j >= first
                && j < end
                && self.splits[j].offset <= rank
                && (j + 1 == end || rank < self.splits[j + 1].offset)
        };
        let j = if in_split(hint.split) {
            hint.split
        } else if in_split(hint.split + 1) {
            hint.split + 1
        } else {
            first + self.splits[first..end].partition_point(|s| s.offset <= rank) - 1
        };
        *hint = UnrankHint { class: i, split: j };
        let split = &self.splits[j];
        let within = rank - split.offset;
        let half = |m: u16, arr: u32| -> u64 {
            self.arrangements[(self.arrangement_start[m as usize] + arr) as usize] as u64
        };
        let board = half(split.m1, within / split.n2) | half(split.m2, within % split.n2) << 16;
        let side = match (class.start, side_bit) {
            (true, 0) => 0,
            (true, _) => return None,
            (false, b) => 1 + b,
        };
        Some(board | (side | (class.hidden as u64) << 8) << 32)
    }
}

/// Where [`CdcIndex::unrank_key_near`] starts its searches: the class (an index into the
/// level's classes) and the block (an index into all blocks) of the rank before.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct UnrankHint {
    class: usize,
    split: usize,
}

impl PerfectIndex<crate::games::Cdc> for CdcIndex {
    fn level_size(&self, level: u32) -> u64 {
        self.sizes.get(level as usize).copied().unwrap_or(0)
    }

    #[inline]
    fn rank(&self, g: &crate::games::Cdc, s: &<crate::games::Cdc as Game>::State) -> u64 {
        // Decision positions always rank; `u64::MAX` makes the solver report a bad state.
        self.rank_key_checked::<false>(g.key(s))
            .map_or(u64::MAX, |x| x.1)
    }

    fn unrank(
        &self,
        g: &crate::games::Cdc,
        level: u32,
        r: u64,
    ) -> Option<<crate::games::Cdc as Game>::State> {
        g.state_from_key(self.unrank_key(level, r)?).ok()
    }
}

/// The perfect index of reduced Chinese Checkers (see the module docs).
#[derive(Clone, Debug)]
pub struct CheckersIndex {
    /// Squares of the board.
    squares: u32,
    /// Checkers per side.
    per_side: u32,
    /// 2 x squares! / (squares - 2 per_side)!.
    size: u64,
}

impl CheckersIndex {
    /// The index of a board of `squares` squares with `per_side` checkers a side.
    pub fn new(squares: u32, per_side: u32) -> CheckersIndex {
        let k = 2 * per_side;
        let size = (0..k).fold(2u64, |acc, i| acc.saturating_mul((squares - i) as u64));
        CheckersIndex {
            squares,
            per_side,
            size,
        }
    }

    /// The rank of a checkers key (6 bits per checker square, then the side bit).
    pub fn rank_key(&self, key: u128) -> u64 {
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
    pub fn unrank_key(&self, r: u64) -> Option<u128> {
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

impl PerfectIndex<crate::games::Checkers> for CheckersIndex {
    fn level_size(&self, level: u32) -> u64 {
        if level == 0 { self.size } else { 0 }
    }

    #[inline]
    fn rank(&self, g: &crate::games::Checkers, s: &<crate::games::Checkers as Game>::State) -> u64 {
        self.rank_key(g.key(s))
    }

    fn unrank(
        &self,
        g: &crate::games::Checkers,
        level: u32,
        r: u64,
    ) -> Option<<crate::games::Checkers as Game>::State> {
        if level != 0 {
            return None;
        }
        g.state_from_key(self.unrank_key(r)?).ok()
    }
}
