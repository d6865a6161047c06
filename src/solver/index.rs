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
//!   are numbered in a fixed order with prefix sums of their sizes; an arrangement is ranked by
//!   its multinomial (multiset-permutation) rank. Rank = class offset + 2 x arrangement rank +
//!   (black to move). The start position (all face down, no colour yet) is rank 0 of its level.
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
    /// Symbol counts on the board (empty, down, coloured kinds).
    counts: [u8; SYMBOLS],
    /// The face-down multiset's radix number (the key's aux >> 8).
    hidden: u32,
    /// All pieces face down: the start position, no colour to move yet.
    start: bool,
}

/// The perfect index of 2x4 Chinese dark chess (see the module docs).
#[derive(Clone, Debug)]
pub struct CdcIndex {
    /// The key's mixed radix by square symbol: the place value of each coloured kind (0 if
    /// not in the material, and for empty and face-down squares).
    symbol_place: [u32; SYMBOLS],
    /// Material count of each coloured kind.
    material: [u8; CKINDS],
    /// Number of distinct multisets (the radix's range).
    radix: u32,
    /// `class_of[revealed * radix + hidden]`: (level, offset), or `u32::MAX` level if invalid.
    class_of: Vec<(u32, u64)>,
    /// Classes per level, ascending by offset.
    classes: Vec<Vec<CdcClass>>,
    sizes: Vec<u64>,
    /// `pext[rem][set]`: the bits of `set` at the positions of `rem`'s bits, packed low.
    pext: Vec<u8>,
    /// `pdep[rem][packed]`: the inverse, `packed`'s low bits spread onto `rem`'s bits.
    pdep: Vec<u8>,
    /// Colex rank of an 8-bit set among the sets of its size.
    colex: [u8; 256],
    /// `colex_set[k][i]`: the set of size k with colex rank i.
    colex_set: [[u8; 70]; SQUARES + 1],
}

/// Binomial coefficients C(n, k) for n, k <= 8.
const BINOM: [[u64; SQUARES + 1]; SQUARES + 1] = {
    let mut t = [[0u64; SQUARES + 1]; SQUARES + 1];
    let mut n = 0;
    while n <= SQUARES {
        t[n][0] = 1;
        let mut k = 1;
        while k <= n {
            t[n][k] = t[n - 1][k - 1] + if k < n { t[n - 1][k] } else { 0 };
            k += 1;
        }
        n += 1;
    }
    t
};

/// `NIBBLES[set]`: a 1 in the nibble of each square of the 8-bit `set`.
const NIBBLES: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut set = 0;
    while set < 256 {
        let mut sq = 0;
        while sq < SQUARES {
            if set >> sq & 1 == 1 {
                t[set] |= 1 << (4 * sq);
            }
            sq += 1;
        }
        set += 1;
    }
    t
};

const FACT: [u64; SQUARES + 1] = [1, 1, 2, 6, 24, 120, 720, 5040, 40320];

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
                let arrangements =
                    FACT[SQUARES] / counts.iter().map(|&c| FACT[c as usize]).product::<u64>();
                let level = 2 * down + shown;
                let start = down as u32 == pieces;
                class_of[(rev * radix + hid) as usize] = (level as u32, sizes[level]);
                classes[level].push(CdcClass {
                    offset: sizes[level],
                    counts,
                    hidden: hid,
                    start,
                });
                sizes[level] += 2 * arrangements;
            }
        }
        let mut pext = vec![0u8; 256 * 256];
        let mut pdep = vec![0u8; 256 * 256];
        for rem in 0..256usize {
            for set in 0..256usize {
                let (mut packed, mut spread, mut j) = (0usize, 0usize, 0);
                for bit in 0..SQUARES {
                    if rem >> bit & 1 == 1 {
                        packed |= (set >> bit & 1) << j;
                        spread |= (set >> j & 1) << bit;
                        j += 1;
                    }
                }
                pext[rem * 256 + set] = packed as u8;
                pdep[rem * 256 + set] = spread as u8;
            }
        }
        let mut colex = [0u8; 256];
        let mut colex_set = [[0u8; 70]; SQUARES + 1];
        for set in 0..256usize {
            // Colex rank: sum over the i-th smallest member at position b of C(b, i + 1).
            let mut r = 0;
            let mut i = 0;
            for (b, row) in BINOM.iter().enumerate().take(SQUARES) {
                if set >> b & 1 == 1 {
                    i += 1;
                    r += row[i];
                }
            }
            colex[set] = r as u8;
            colex_set[(set as u32).count_ones() as usize][r as usize] = set as u8;
        }
        let mut symbol_place = [0u32; SYMBOLS];
        symbol_place[2..].copy_from_slice(&place);
        CdcIndex {
            symbol_place,
            material: mat,
            radix,
            class_of,
            classes,
            sizes,
            pext,
            pdep,
            colex,
            colex_set,
        }
    }

    /// The rank of a 2x4 key of a decision position (pending flip 0), with its level.
    /// `None` for keys no well-formed decision position has.
    pub fn rank_key(&self, key: u64) -> Option<(u32, u64)> {
        self.rank_key_checked::<true>(key)
    }

    /// [`CdcIndex::rank_key`]; with `CHECK` false the material is not checked (keys of
    /// states the game made never exceed it), which the solver's hot loop relies on.
    #[inline]
    fn rank_key_checked<const CHECK: bool>(&self, key: u64) -> Option<(u32, u64)> {
        let aux = key >> 32;
        if (aux >> 2) & 63 != 0 {
            return None;
        }
        let hidden = aux >> 8;
        if hidden >= self.radix as u64 {
            return None;
        }
        // The set of squares of each symbol, and the revealed multiset's radix number.
        let mut sets = [0u8; SYMBOLS];
        let mut present = 0u32;
        let mut revealed = 0u32;
        for sq in 0..SQUARES {
            let c = ((key >> (4 * sq)) & 15) as usize;
            sets[c] |= 1 << sq;
            present |= 1 << c;
            revealed += self.symbol_place[c];
        }
        if CHECK {
            for ck in 0..CKINDS {
                if sets[ck + 2].count_ones() > self.material[ck] as u32 {
                    return None;
                }
            }
        }
        let (level, offset) = self.class_of[(revealed * self.radix) as usize + hidden as usize];
        if level == u32::MAX {
            return None;
        }
        // The arrangement: symbol by symbol (ascending), the colex rank of its squares among
        // the squares the smaller symbols left, in a mixed radix of binomials.
        let mut rank = 0u64;
        let mut mult = 1u64;
        let mut rem = 0xFFusize;
        let mut left = SQUARES;
        while present != 0 {
            let t = present.trailing_zeros() as usize;
            present &= present - 1;
            let set = sets[t] as usize;
            let k = set.count_ones() as usize;
            let packed = self.pext[rem * 256 + set] as usize;
            rank += mult * self.colex[packed] as u64;
            mult *= BINOM[left][k];
            rem &= !set;
            left -= k;
        }
        let side = match aux & 3 {
            0 => 0,
            1 => 0,
            2 => 1,
            _ => return None,
        };
        Some((level, offset + 2 * rank + side))
    }

    /// The (level, rank) of the key of a decision position the game made (material not
    /// re-checked); `(u32::MAX, u64::MAX)` for a key no well-formed position has.
    #[inline]
    pub(crate) fn rank_key_unchecked(&self, key: u64) -> (u32, u64) {
        self.rank_key_checked::<false>(key)
            .unwrap_or((u32::MAX, u64::MAX))
    }

    /// The size of `level`'s rank space (0 above the top).
    pub fn level_size_of(&self, level: u32) -> u64 {
        self.sizes.get(level as usize).copied().unwrap_or(0)
    }

    /// The key of rank `r` in `level`, or `None` outside the rank space (or the start
    /// position with a colour to move).
    pub fn unrank_key(&self, level: u32, r: u64) -> Option<u64> {
        self.unrank_key_near(level, r, &mut 0)
    }

    /// [`CdcIndex::unrank_key`], starting the class search at `*hint` (a class index of the
    /// level, updated to the one found): ascending ranks mostly stay in one class, so a
    /// run of them skips the search.
    #[inline]
    pub(crate) fn unrank_key_near(&self, level: u32, r: u64, hint: &mut usize) -> Option<u64> {
        let classes = self.classes.get(level as usize)?;
        if r >= self.sizes[level as usize] {
            return None;
        }
        let fits = |i: usize| {
            i < classes.len()
                && classes[i].offset <= r
                && classes.get(i + 1).is_none_or(|c| r < c.offset)
        };
        let i = if fits(*hint) {
            *hint
        } else if fits(*hint + 1) {
            *hint + 1
        } else {
            classes.partition_point(|c| c.offset <= r) - 1
        };
        *hint = i;
        let class = &classes[i];
        let local = r - class.offset;
        let side_bit = local & 1;
        let mut rank = local >> 1;
        let mut rem = 0xFFusize;
        let mut left = SQUARES;
        let mut board = 0u64;
        for (t, &k) in class.counts.iter().enumerate() {
            let k = k as usize;
            if k == 0 {
                continue;
            }
            let b = BINOM[left][k];
            let set = self.pdep[rem * 256 + self.colex_set[k][(rank % b) as usize] as usize];
            rank /= b;
            // One nibble of value `t` on each square of `set`.
            board |= t as u64 * NIBBLES[set as usize];
            rem &= !(set as usize);
            left -= k;
        }
        let side = match (class.start, side_bit) {
            (true, 0) => 0,
            (true, _) => return None,
            (false, b) => 1 + b,
        };
        Some(board | (side | (class.hidden as u64) << 8) << 32)
    }
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
