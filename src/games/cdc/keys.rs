//! The layered solver's view of 2x4 Chinese dark chess: its [`Solvable`] ability, the key
//! expander (one decision position's successors straight from its key) and the
//! [`KeySpace`] that the solve on keys runs over (`docs/solver.md`, "Solving on keys").

use super::index::{CdcIndex, UnrankHint};
use super::*;
use crate::solver::index::PerfectIndex;
use crate::solver::layered::{self, KeySpace};
use crate::solver::{Method, Progress, Solution, Solvable, SolveError};

/// 2x4 CDC may cycle (plain moves back and forth), so it is solved level by level
/// ([`Cdc::level`]: flips and captures lower the level, plain moves keep it and pass the turn).
impl Solvable for Cdc {
    fn method(&self) -> Method {
        Method::Layered
    }

    fn check_solvable(&self) -> Result<(), String> {
        Ok(())
    }

    fn level(&self, s: &CdcState2x4) -> u32 {
        Cdc::level(self, s)
    }

    fn test_positions(&self) -> Vec<CdcState2x4> {
        Cdc::test_positions(self)
    }

    fn perfect_index(&self) -> Option<Box<dyn PerfectIndex<Self>>> {
        Some(Box::new(CdcIndex::new(&self.material())))
    }

    fn solve_keyed(
        &self,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Option<Result<Solution<u64>, SolveError>> {
        Some(layered::solve_keys(CdcKeys::new(self), progress))
    }
}

/// What [`KeyExpander`] reads off a face-down multiset's number: the count of each of the
/// material's coloured kinds, their total, and the face-down pieces of each colour.
#[derive(Clone, Copy, Default)]
struct FaceDown {
    counts: [u8; PRESENT_MAX],
    total: u8,
    per_colour: [u8; 2],
}

/// At most 4 kinds a side, so 8 coloured kinds in a 2x4 material.
const PRESENT_MAX: usize = 8;

/// The layered solver's step on a key for the 2x4 game (`docs/solver.md`, "Solving on keys"),
/// with what depends only on the material computed once: the coloured kinds the material has
/// (flips iterate over those, not all 14) and, by face-down multiset number, that multiset's
/// counts (no divisions per position).
pub(crate) struct KeyExpander<'a> {
    rules: &'a Rules,
    /// The material's coloured kinds, ascending (outcome order), and their number.
    present: [u8; PRESENT_MAX],
    kinds: usize,
    /// Place value of each of `present` in the face-down multiset's number.
    place: [u64; PRESENT_MAX],
    /// By multiset number.
    face_down: Vec<FaceDown>,
}

impl<'a> KeyExpander<'a> {
    pub(super) fn new(rules: &'a Rules) -> KeyExpander<'a> {
        let mut present = [0u8; PRESENT_MAX];
        let mut place = [0u64; PRESENT_MAX];
        let mut kinds = 0;
        for ck in 0..CKINDS {
            if rules.material[ck % KINDS] > 0 {
                present[kinds] = ck as u8;
                place[kinds] = rules.place[ck] as u64;
                kinds += 1;
            }
        }
        let face_down = (0..rules.radix_total as u64)
            .map(|radix| {
                let hidden = rules.hidden_of(radix);
                let mut f = FaceDown::default();
                for (i, &ck) in present[..kinds].iter().enumerate() {
                    let h = hidden[ck as usize];
                    f.counts[i] = h;
                    f.total += h;
                    f.per_colour[ck_colour(ck).index()] += h;
                }
                f
            })
            .collect();
        KeyExpander {
            rules,
            present,
            kinds,
            place,
            face_down,
        }
    }

    /// Expands the decision position `key` (pending flip 0, fresh draw counters) without
    /// building states. Each internal move (a plain move to a live position, same level)
    /// gives its successor's key to `internal`; each exit's decision positions (one level
    /// lower, the other colour to move) go to `lower`, which answers their value for their
    /// side to move. Returns the best exit value for the mover (`-inf` when every move is
    /// internal).
    ///
    /// Same values, bit for bit, as the generic path through `Game`: actions in the order of
    /// `legal_actions` (flips by square, then moves by (src, dst)), a flip's outcomes in
    /// outcome order with the same probabilities, summed from 0 in that order, and
    /// [`Rules::settle`]'s checks of the successor in its order (no-progress, then the loss of
    /// the side to move; one plain move never completes a repetition).
    #[inline]
    pub(crate) fn expand(
        &self,
        key: u64,
        internal: &mut impl FnMut(u64),
        lower: &mut impl FnMut(u64) -> f64,
    ) -> f64 {
        let r = self.rules;
        let mut board = [EMPTY; 8];
        for (sq, b) in board.iter_mut().enumerate() {
            *b = ((key >> (4 * sq)) & 15) as u8;
        }
        let aux = key >> 32;
        let mover = match aux & 3 {
            1 => Some(Colour::Red),
            2 => Some(Colour::Black),
            _ => None,
        };
        let radix = aux >> 8;
        let fd = &self.face_down[radix as usize];
        let squares = key & 0xFFFF_FFFF;
        // Pieces of each colour left (on the board or face down) and face-down squares; a
        // flip keeps both counts, a capture takes one piece of the side that moves next.
        let mut left = [fd.per_colour[0] as u32, fd.per_colour[1] as u32];
        let mut downs = 0;
        for &t in &board {
            if t >= PIECE0 {
                left[ck_colour(t - PIECE0).index()] += 1;
            }
            downs += (t == DOWN) as usize;
        }
        // `Rules::settle` on a successor with `next` to move and `left` pieces: does `next`
        // lose at once (no piece, or no flip and no move)?
        let loses = |b: &[u8; 8], any_down: bool, left: u32, next: Colour| -> bool {
            left == 0 || (!any_down && r.for_each_move(b, next, |_, _| false))
        };
        let mut best = f64::NEG_INFINITY;
        if downs > 0 {
            // Each revealable kind's probability and colour to move next, once per position.
            let total = fd.total as u32;
            let mut prob = [0.0f64; PRESENT_MAX];
            for (p, &h) in prob.iter_mut().zip(&fd.counts[..self.kinds]) {
                *p = h as f64 / total as f64;
            }
            for sq in 0..8 {
                if board[sq] != DOWN {
                    continue;
                }
                let mut sum = 0.0;
                let kinds = (fd.counts.iter().zip(&prob))
                    .zip(self.present.iter().zip(&self.place))
                    .take(self.kinds);
                for ((&h, &p), (&ck, &place)) in kinds {
                    if h == 0 {
                        continue;
                    }
                    let code = PIECE0 + ck;
                    let mut b = board;
                    b[sq] = code;
                    let next = mover.unwrap_or(ck_colour(ck)).other();
                    let v = if loses(&b, downs > 1, left[next.index()], next) {
                        1.0
                    } else {
                        let bits = squares ^ (((code ^ DOWN) as u64) << (4 * sq));
                        -lower(pack(bits, next, radix - place))
                    };
                    sum += p * v;
                }
                best = best.max(sum);
            }
        }
        if let Some(c) = mover {
            let next = c.other();
            r.for_each_move(&board, c, |src, dst| {
                let captured = board[dst] >= PIECE0;
                if !captured && r.no_progress <= 1 {
                    best = best.max(0.0);
                    return true;
                }
                let mut b = board;
                b[dst] = b[src];
                b[src] = EMPTY;
                let bits = (squares & !(0xF << (4 * src)) & !(0xF << (4 * dst)))
                    | ((board[src] as u64) << (4 * dst));
                let left = left[next.index()] - captured as u32;
                if loses(&b, downs > 0, left, next) {
                    best = best.max(1.0);
                } else if captured {
                    best = best.max(-lower(pack(bits, next, radix)));
                } else {
                    internal(pack(bits, next, radix));
                }
                true
            });
        }
        best
    }
}

/// A successor's key: its board nibbles, the colour to move, the face-down multiset.
#[inline(always)]
fn pack(bits: u64, next: Colour, radix: u64) -> u64 {
    let side_code = match next {
        Colour::Red => 1,
        Colour::Black => 2,
    };
    bits | (side_code | radix << 8) << 32
}

/// 2x4 CDC as a [`KeySpace`]: its perfect index ([`CdcIndex`]) and its key expander, for the
/// layered solve on keys ([`layered::solve_keys`]).
pub(crate) struct CdcKeys<'a> {
    game: &'a Cdc,
    index: CdcIndex,
    step: KeyExpander<'a>,
}

impl<'a> CdcKeys<'a> {
    pub(crate) fn new(game: &'a Cdc) -> CdcKeys<'a> {
        CdcKeys {
            game,
            index: CdcIndex::new(&game.material()),
            step: KeyExpander::new(&game.rules),
        }
    }
}

impl KeySpace for CdcKeys<'_> {
    type Hint = UnrankHint;

    fn variant(&self) -> String {
        self.game.variant()
    }

    fn start(&self) -> u64 {
        self.game.key(&self.game.initial_state())
    }

    fn level_size(&self, level: usize) -> usize {
        self.index.level_size_of(level as u32) as usize
    }

    /// Keys the game made always rank, and a move never raises the level (checked in debug).
    #[inline(always)]
    fn place(&self, key: u64) -> (usize, u32) {
        let (l, r) = self.index.rank_key_unchecked(key);
        (l as usize, r as u32)
    }

    #[inline(always)]
    fn unrank(&self, level: usize, r: u32, hint: &mut UnrankHint) -> Option<u64> {
        self.index.unrank_key_near(level as u32, r as u64, hint)
    }

    #[inline(always)]
    fn expand(
        &self,
        key: u64,
        internal: &mut impl FnMut(u64),
        lower: &mut impl FnMut(u64) -> f64,
    ) -> f64 {
        self.step.expand(key, internal, lower)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::value_for_pooled;

    /// A fixed pseudo-value in [-1, 1) per key, standing in for solved lower levels.
    fn pseudo(k: u64) -> f64 {
        let h = k.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (k >> 29);
        (h >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }

    /// [`KeyExpander::expand`] against the generic step through `Game` (the one
    /// [`layered::solve`] takes) on a spread of well-formed positions of every level: the same internal
    /// successors in the same order and the same best exit value, bit for bit.
    #[test]
    fn key_expander_matches_the_game_api() {
        let mut checked = 0;
        for material in ["KCPP", "KGMR", "GMCP", "CCPP", "KGMC,no_progress=1"] {
            let g = Cdc::new(material).unwrap();
            let index = CdcIndex::new(&g.material());
            let expander = KeyExpander::new(&g.rules);
            let mut actions = Vec::new();
            let mut pool = Vec::new();
            for level in 0..=16u32 {
                let size = index.level_size_of(level);
                let step = (size / 300).max(1);
                for r in (0..size).step_by(step as usize) {
                    let Some(key) = index.unrank_key(level, r) else {
                        continue;
                    };
                    let s = g.state_from_key(key).unwrap();
                    let Turn::Player(mover) = g.turn(&s) else {
                        continue;
                    };
                    let mut want = Vec::new();
                    let mut want_best = f64::NEG_INFINITY;
                    g.legal_actions(&s, &mut actions);
                    for &a in &actions {
                        let child = g.apply(&s, a);
                        match g.turn(&child) {
                            Turn::Player(_) if g.level(&child) == level => want.push(g.key(&child)),
                            _ => {
                                let lookup = |t: &<Cdc as Game>::State| {
                                    assert_eq!(g.level(t), level - 1);
                                    Some(pseudo(g.key(t)))
                                };
                                let v = value_for_pooled(&g, &child, mover, &lookup, &mut pool, 0)
                                    .unwrap();
                                want_best = want_best.max(v);
                            }
                        }
                    }
                    let mut got = Vec::new();
                    let got_best = expander.expand(key, &mut |k| got.push(k), &mut pseudo);
                    assert_eq!(got, want, "{material}: internal moves of {key:#x}");
                    assert_eq!(
                        got_best.to_bits(),
                        want_best.to_bits(),
                        "{material}: best exit of {key:#x}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 10_000, "{checked}");
    }
}
