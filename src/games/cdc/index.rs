//! The perfect index of 2x4 Chinese dark chess ([`CdcIndex`]): every decision position of a
//! level ranked onto `0..level_size`, for the layered solver (the trait and its invariants:
//! [`PerfectIndex`]; design in `docs/solver.md`, "A perfect index").
//!
//! | variant | rank space | reachable decision positions |
//! |---|---|---|
//! | `cdc:PPPP` | 251,068 | 194,933 |
//! | `cdc:KPPP` | 2,422,204 | 1,933,965 |
//! | `cdc:GGCC` | 4,580,472 | 4,031,785 |
//!
//! The ranking works on the game's key (which holds the whole position). A position is a
//! *class* (the multiset of revealed pieces on the board and the multiset of face-down pieces,
//! each a mixed-radix number in the key's own radix) times an arrangement of the class's
//! symbols (empty, face down, each coloured kind) on the 8 squares, times the colour to move.
//! Classes of a level are numbered in a fixed order with prefix sums of their sizes. An
//! arrangement is split between the board's two halves (squares 0-3 and 4-7, 16 key bits
//! each): the first half's multiset picks a block of the class's arrangements (blocks in a
//! fixed order, prefix sums of (first half's arrangements) x (second half's)), and within the
//! block the two halves' ranks among their multisets' arrangements form a mixed-radix number.
//! One table over the 2^16 half boards gives each half's multiset, rank and arrangement count,
//! so ranking a key is two table lookups, the class and the block: no loop over squares.
//! Rank = class offset + 2 x arrangement rank + (black to move). The start position (all face
//! down, no colour yet) is rank 0 of its level.

use super::Cdc;
use crate::game::Game;
use crate::solver::index::PerfectIndex;

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

/// The material as the index reads it: the count of each coloured kind and the face-down
/// multiset's mixed radix (the key's own, see the game's module docs).
struct Material {
    /// Count of each coloured kind.
    counts: [u8; CKINDS],
    /// Place value of each square symbol in the radix (0 for empty, face down and the kinds
    /// the material lacks).
    symbol_place: [u32; SYMBOLS],
    /// Number of distinct multisets (the radix's range).
    radix: u32,
    /// Pieces of both sides.
    pieces: u32,
}

impl Material {
    fn parse(material: &str) -> Material {
        let mut per_kind = [0u8; KINDS];
        for ch in material.chars() {
            if let Some(k) = "KGMRNCP".find(ch.to_ascii_uppercase()) {
                per_kind[k] += 1;
            }
        }
        let mut place = [0u32; CKINDS];
        let mut counts = [0u8; CKINDS];
        let mut radix = 1u32;
        for ck in 0..CKINDS {
            let m = per_kind[ck % KINDS];
            counts[ck] = m;
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
        Material {
            counts,
            symbol_place,
            radix,
            pieces: counts.iter().map(|&m| m as u32).sum(),
        }
    }

    /// The count of each coloured kind in multiset number `x`.
    fn digits(&self, x: u32) -> [u8; CKINDS] {
        let mut d = [0u8; CKINDS];
        let mut r = x;
        for (digit, &m) in d.iter_mut().zip(&self.counts) {
            if m > 0 {
                *digit = (r % (m as u32 + 1)) as u8;
                r /= m as u32 + 1;
            }
        }
        d
    }
}

/// The symbol counts of a whole board with the revealed pieces `revealed` and `down`
/// face-down squares (the caller checks that they fit on the board).
fn board_counts(revealed: &[u8; CKINDS], down: usize, shown: usize) -> [u8; SYMBOLS] {
    let mut counts = [0u8; SYMBOLS];
    counts[0] = (SQUARES - down - shown) as u8;
    counts[1] = down as u8;
    counts[2..].copy_from_slice(revealed);
    counts
}

/// Half boards: each of the 2^16 values of four squares' nibbles, its multiset (ids in order
/// of first appearance) and its rank among that multiset's arrangements.
struct HalfBoards {
    /// [`CdcIndex::half`].
    half: Vec<u64>,
    /// Multiset ids by symbol counts, and the counts by id.
    ids: std::collections::BTreeMap<[u8; SYMBOLS], u16>,
    counts: Vec<[u8; SYMBOLS]>,
    /// [`CdcIndex::arrangements`] and [`CdcIndex::arrangement_start`].
    arrangements: Vec<u16>,
    arrangement_start: Vec<u32>,
}

impl HalfBoards {
    fn new(m: &Material) -> HalfBoards {
        let mut ids: std::collections::BTreeMap<[u8; SYMBOLS], u16> = Default::default();
        let mut ms_counts: Vec<[u8; SYMBOLS]> = Vec::new();
        let mut by_ms: Vec<Vec<u16>> = Vec::new();
        let mut half = vec![0u64; 1 << 16];
        for (h, entry) in half.iter_mut().enumerate() {
            let mut counts = [0u8; SYMBOLS];
            for sq in 0..SQUARES / 2 {
                counts[(h >> (4 * sq)) & 15] += 1;
            }
            let fits = (0..CKINDS).all(|ck| counts[ck + 2] <= m.counts[ck]);
            if !fits {
                continue;
            }
            let next = ms_counts.len() as u16;
            let id = *ids.entry(counts).or_insert(next);
            if id == next {
                ms_counts.push(counts);
                by_ms.push(Vec::new());
            }
            let arr = by_ms[id as usize].len() as u64;
            by_ms[id as usize].push(h as u16);
            let rev: u32 = (0..SYMBOLS)
                .map(|t| m.symbol_place[t] * counts[t] as u32)
                .sum();
            *entry = HALF_OK
                | rev as u64
                | (id as u64) << 16
                | arr << 32
                | arrangements_of(&counts) << 40
                | (counts[1] as u64) << 48;
        }
        let mut arrangement_start = vec![0u32];
        let mut arrangements = Vec::new();
        for list in &by_ms {
            arrangements.extend_from_slice(list);
            arrangement_start.push(arrangements.len() as u32);
        }
        HalfBoards {
            half,
            ids,
            counts: ms_counts,
            arrangements,
            arrangement_start,
        }
    }
}

/// Board multisets (revealed multiset, face-down count) and their splits into two halves,
/// first halves in id order: [`CdcIndex::split_rank`], [`CdcIndex::splits`] and
/// [`CdcIndex::split_start`].
struct BoardSplits {
    split_rank: Vec<u32>,
    splits: Vec<Split>,
    split_start: Vec<u32>,
}

impl BoardSplits {
    fn new(m: &Material, halves: &HalfBoards) -> BoardSplits {
        let multisets = halves.counts.len();
        let boards = (m.radix * DOWN_COUNTS) as usize;
        let mut split_rank = vec![u32::MAX; boards * multisets];
        let mut splits = Vec::new();
        let mut split_start = vec![0u32];
        for b in 0..boards {
            let r = m.digits(b as u32 / DOWN_COUNTS);
            let down = (b as u32 % DOWN_COUNTS) as usize;
            let shown: usize = r.iter().map(|&x| x as usize).sum();
            if down + shown <= SQUARES {
                let counts = board_counts(&r, down, shown);
                let mut offset = 0u64;
                for (m1, c1) in halves.counts.iter().enumerate() {
                    if (0..SYMBOLS).any(|t| c1[t] > counts[t]) {
                        continue;
                    }
                    let mut c2 = counts;
                    for t in 0..SYMBOLS {
                        c2[t] -= c1[t];
                    }
                    let m2 = halves.ids[&c2];
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
        BoardSplits {
            split_rank,
            splits,
            split_start,
        }
    }
}

/// The classes of every level in a fixed order, with their offsets and the level sizes:
/// [`CdcIndex::class_of`], [`CdcIndex::classes`] and [`CdcIndex::sizes`].
struct Classes {
    class_of: Vec<(u32, u64)>,
    by_level: Vec<Vec<CdcClass>>,
    sizes: Vec<u64>,
}

impl Classes {
    fn new(m: &Material) -> Classes {
        let radix = m.radix;
        let mut class_of = vec![(u32::MAX, 0u64); (radix * radix) as usize];
        let mut by_level: Vec<Vec<CdcClass>> = vec![Vec::new(); 2 * SQUARES + 1];
        let mut sizes = vec![0u64; 2 * SQUARES + 1];
        for rev in 0..radix {
            let r = m.digits(rev);
            for hid in 0..radix {
                let h = m.digits(hid);
                if (0..CKINDS).any(|ck| r[ck] + h[ck] > m.counts[ck]) {
                    continue;
                }
                let down: usize = h.iter().map(|&x| x as usize).sum();
                let shown: usize = r.iter().map(|&x| x as usize).sum();
                if down + shown > SQUARES {
                    continue;
                }
                let counts = board_counts(&r, down, shown);
                let level = 2 * down + shown;
                class_of[(rev * radix + hid) as usize] = (level as u32, sizes[level]);
                by_level[level].push(CdcClass {
                    offset: sizes[level],
                    board: rev * DOWN_COUNTS + down as u32,
                    hidden: hid,
                    start: down as u32 == m.pieces,
                });
                sizes[level] += 2 * arrangements_of(&counts);
            }
        }
        Classes {
            class_of,
            by_level,
            sizes,
        }
    }
}

impl CdcIndex {
    /// The index for the material `KGMRNCP`-letters of one side (e.g. `"GGCC"`).
    pub fn new(material: &str) -> CdcIndex {
        let m = Material::parse(material);
        let halves = HalfBoards::new(&m);
        let splits = BoardSplits::new(&m, &halves);
        let classes = Classes::new(&m);
        CdcIndex {
            material: m.counts,
            radix: m.radix,
            class_of: classes.class_of,
            classes: classes.by_level,
            sizes: classes.sizes,
            half: halves.half,
            multisets: halves.counts.len(),
            split_rank: splits.split_rank,
            splits: splits.splits,
            split_start: splits.split_start,
            arrangements: halves.arrangements,
            arrangement_start: halves.arrangement_start,
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
    /// the solver's hot loop ranks only keys the key expander ([`super::keys`]) wrote (held to
    /// the game's own step by that module's tests). A key no decision position has gets a meaningless
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
    pub(crate) fn level_size_of(&self, level: u32) -> u64 {
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

impl PerfectIndex<Cdc> for CdcIndex {
    fn level_size(&self, level: u32) -> u64 {
        self.sizes.get(level as usize).copied().unwrap_or(0)
    }

    #[inline]
    fn rank(&self, g: &Cdc, s: &<Cdc as Game>::State) -> u64 {
        // Decision positions always rank; `u64::MAX` makes the solver report a bad state.
        self.rank_key_checked::<false>(g.key(s))
            .map_or(u64::MAX, |x| x.1)
    }

    fn unrank(&self, g: &Cdc, level: u32, r: u64) -> Option<<Cdc as Game>::State> {
        g.state_from_key(self.unrank_key(level, r)?).ok()
    }
}
