//! EinStein würfelt nicht! (EWN) on any W x H board with k numbered pieces per side.
//!
//! # Rules
//! Squares are (r, c) with r = 0 the top row, index `r*W + c`, named by a column letter and a
//! row number counted from the top: (0, 0) = `a1`, (1, 2) = `c2`.
//!
//! Red (`Player::P0`) starts in the top-left corner and moves right (horizontal), down
//! (vertical) or down-right (diagonal); blue (`Player::P1`) starts in the bottom-right corner
//! and moves left, up or up-left. Red's target is (H-1, W-1), blue's is (0, 0).
//!
//! Start squares: red's are the first k squares in the order of (r + c, then r); blue's are
//! red's rotated by 180 degrees, `(r, c) -> (H-1-r, W-1-c)`, taken in the same order. So
//! 3x3x3 and 3x4x3 put red on a1 b1 a2 (= (0,0) (0,1) (1,0)); 3x3x4 adds c1 = (0,2); 5x5x6
//! fills the triangle r + c <= 2. The rotation reverses that order, so blue's start squares
//! are the last k squares of it, and the two sides' squares are disjoint exactly when
//! 2k <= W*H.
//!
//! Start: two chance events place the pieces, red's first, then blue's. Each is a uniformly
//! random permutation (k! outcomes). Outcome `o` is the lexicographic rank of the sequence
//! `p[0..k]` (a permutation of 1..k), and piece `p[j]` goes to the side's j-th start square
//! (in the order above). Outcome 0 puts piece 1 on the first start square, piece 2 on the
//! second, and so on; outcome k!-1 reverses that. Red moves first.
//!
//! Every turn begins with a chance event, the die roll: outcome `o` in 0..k is die value
//! `d = o + 1`, each with probability 1/k. With die d the player must move its piece d; if
//! piece d is gone, it may move either the next-higher or the next-lower numbered piece it
//! still has (whichever exist). A piece steps one square in one of its three directions,
//! never off the board; a piece on the destination is captured whatever its colour.
//!
//! The mover wins by landing on its target corner or by capturing the opponent's last piece.
//! There are no draws. A player never runs out of pieces at its own turn: only the opponent
//! can capture its last piece, and that move ends the game. Every piece not on its target has
//! at least one step on the board, so every decision state has a legal action.
//!
//! # Parameters
//! `ewn:WxHxk` with W, H in 2..=15 and k in 1..=7, subject to: red's k start squares must not
//! meet blue's (2k <= W*H), and the key must fit 64 bits: `2k*b + 1 + db <= 64` with `b` the
//! bit length of W*H and `db` the bit length of k (see the key layout). For example 2x2
//! allows k <= 2, 3x3 k <= 4, 3x4 and 5x5 k <= 6, 4x4 k <= 6 (k = 7 would need 74 key bits).
//!
//! # Actions (|A| = 6)
//! `3*h + dir`: h = 0 moves the piece numbered <= d (the rolled piece, or the lower substitute
//! when piece d is gone), h = 1 the higher substitute; dir 0 = diagonal, 1 = horizontal,
//! 2 = vertical. Names look like `R3 a1-b2` (red piece 3 from a1 to b2), with `xB1` appended
//! when the step captures blue's piece 1.
//!
//! # Key (u64)
//! Let `b` = bit length of N = W*H and `db` = bit length of k. From the low bits:
//! - 2k fields of b bits: red pieces 1..k then blue pieces 1..k; field value 0 = off the
//!   board (captured or not yet placed), `s + 1` = on square s;
//! - 1 bit: side (0 red, 1 blue);
//! - db bits: die (0 = none, 1..k);
//! - every higher bit is 0.
//!
//! The phase follows from the fields: no piece anywhere = red's placement (the start state);
//! red's full set on its start squares, blue off the board, side red, no die = blue's
//! placement; a finished position (a red piece on red's target, a blue piece on blue's, or one
//! side without pieces) with no die = terminal, and its side field is the *loser* (the player
//! who would have moved next), so the winner is the other player; otherwise no die = the side
//! to move is about to roll, a die = a decision. Terminal positions can never carry the
//! placement pattern (after red captures blue's last piece the side field is blue), so every
//! state has a distinct key. 5x5x6 uses all 64 bits; 3x3x3 uses 27.
//!
//! # Notation
//! One line: `<board> <side> <phase>`. The board lists rows top to bottom separated by `/`;
//! each square is `.` (empty), `R<n>` (red piece n) or `B<n>` (blue piece n). The phase is a
//! die value `1..k` (the side decides with that die), `roll` (the side is about to roll),
//! `place` (that side's pieces are being placed: `red place` is the start, `blue place`
//! follows red's placement), or `wins` (terminal; the side named is the winner).
//! Example, 3x3x3: `R2R3./R1.B3/.B1B2 red 2`.

mod abilities;
mod encode;

use crate::error::GameError;
use crate::game::{Action, ChanceOutcome, Game, GameResult, Outcome, Player, PlayoutDraws, Turn};
use crate::games::{FamilyInfo, VariantSpec, parse_dims};

pub(crate) const FAMILY: FamilyInfo = FamilyInfo {
    name: "ewn",
    title: "EinStein würfelt nicht!",
    syntax: "ewn:WxHxk",
    parameters: &[
        ("W", "board width, 2..=15"),
        ("H", "board height, 2..=15"),
        (
            "k",
            "pieces per side and die faces, 1..=7; red's k start squares (first k by r+c, then r) \
             must not meet blue's (rotated 180 degrees), and 2k*bits(W*H) + 1 + bits(k) <= 64 \
             (the u64 key); e.g. 5x5 allows k <= 6",
        ),
    ],
    action_space: "6 (3*h + dir: h 0 = rolled or lower piece, 1 = higher piece; dir 0 diagonal, 1 horizontal, 2 vertical)",
    examples: &["ewn:3x3x3", "ewn:3x3x4", "ewn:3x4x3", "ewn:5x5x6"],
};

/// Most pieces per side any allowed variant has.
pub(crate) const KMAX: usize = 7;
/// Largest board width and height.
pub(crate) const MAX_DIM: u32 = 15;
/// `pos` entry of a piece that is not on the board (and `movers` entry of no piece).
const OFF: u8 = u8::MAX;

/// Legal action lists by mask (bit `3h + dir` set = action `3h + dir` legal), ascending, with
/// their lengths: `legal_actions` copies one instead of testing each action.
const ACTION_LISTS: [([Action; 6], u8); 64] = {
    let mut t = [([0; 6], 0); 64];
    let mut m = 0;
    while m < 64 {
        let mut a = 0;
        while a < 6 {
            if m >> a & 1 == 1 {
                t[m].0[t[m].1 as usize] = a as Action;
                t[m].1 += 1;
            }
            a += 1;
        }
        m += 1;
    }
    t
};

/// Where a state stands in the game.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
enum Phase {
    /// Chance: red's pieces are placed (the start state).
    PlaceRed,
    /// Chance: blue's pieces are placed.
    PlaceBlue,
    /// Chance: `side` rolls the die.
    Roll,
    /// `side` decides with `die`.
    Move,
    /// Terminal; `side` is the loser.
    Over,
}

/// An EWN state: piece squares, side, die, phase and the pieces the die lets move, in 16
/// bytes held as one `u128` (byte j = bits 8j..8j+8), which the hot paths update with
/// word-wide bit operations in registers (no byte stores followed by wide loads).
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct EwnState {
    /// Bytes 0..14, `pos`: red piece n at `pos[n-1]`, blue piece n at `pos[k+n-1]`; `OFF`
    /// when not on the board (and for every entry from 2k on).
    ///
    /// Byte 14, `meta`: side (bit 0: 0 red, 1 blue), phase (bits 1-3, `Phase as u8`) and die
    /// (bits 4-6: 1..=k in `Move`, 0 otherwise); read through [`EwnState::side`] and friends.
    ///
    /// Byte 15, `movers`: in `Move`, the `pos` indices of the pieces actions h = 0 (low
    /// nibble) and h = 1 (high nibble) move, `NO_MOVER` for none, found once when the die is
    /// rolled; `NO_MOVERS` in every other phase. A function of the other bytes, so equal
    /// positions have equal states.
    v: u128,
}

/// Index of the `meta` byte.
const META: usize = 14;
/// Index of the `movers` byte.
const MOVERS: usize = 15;

/// A `movers` nibble naming no piece (never a `pos` index).
const NO_MOVER: u8 = 0xF;
/// `movers` of a state outside `Move`.
const NO_MOVERS: u8 = 0xFF;

impl EwnState {
    fn new(pos: [u8; 2 * KMAX], side: Player, phase: Phase, die: u8, movers: u8) -> EwnState {
        let mut b = [0; 16];
        b[..2 * KMAX].copy_from_slice(&pos);
        b[META] = pack_meta(side, phase, die);
        b[MOVERS] = movers;
        EwnState::from_bytes(b)
    }

    /// The piece squares (see the field).
    #[inline]
    fn pos(&self) -> [u8; 2 * KMAX] {
        let mut pos = [0; 2 * KMAX];
        pos.copy_from_slice(&self.bytes()[..2 * KMAX]);
        pos
    }

    /// Byte `j` (< 16).
    #[inline(always)]
    fn byte(&self, j: usize) -> u8 {
        // One 64-bit half, then a shift (cheaper than a variable u128 shift).
        let half = if j < 8 {
            self.v as u64
        } else {
            (self.v >> 64) as u64
        };
        (half >> (8 * (j & 7))) as u8
    }

    #[inline]
    fn meta(&self) -> u8 {
        self.byte(META)
    }

    #[inline]
    fn side(&self) -> Player {
        Player::from_index(usize::from(self.meta() & 1))
    }

    #[inline]
    fn phase(&self) -> Phase {
        match self.meta() >> 1 & 7 {
            0 => Phase::PlaceRed,
            1 => Phase::PlaceBlue,
            2 => Phase::Roll,
            3 => Phase::Move,
            _ => Phase::Over,
        }
    }

    #[inline]
    fn die(&self) -> u8 {
        self.meta() >> 4
    }

    /// The `pos` index moved by actions `3h + dir` (`NO_MOVER` for none).
    #[inline]
    fn mover(&self, h: usize) -> u8 {
        self.byte(MOVERS) >> (4 * h) & NO_MOVER
    }

    /// The 16 bytes: `pos`, `meta`, `movers`.
    #[inline]
    fn bytes(&self) -> [u8; 16] {
        self.v.to_le_bytes()
    }

    #[inline]
    fn from_bytes(b: [u8; 16]) -> EwnState {
        EwnState {
            v: u128::from_le_bytes(b),
        }
    }
}

impl std::fmt::Debug for EwnState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EwnState")
            .field("pos", &self.pos())
            .field("side", &self.side())
            .field("die", &self.die())
            .field("phase", &self.phase())
            .field("movers", &[self.mover(0), self.mover(1)])
            .finish()
    }
}

#[inline]
fn pack_meta(side: Player, phase: Phase, die: u8) -> u8 {
    side.index() as u8 | (phase as u8) << 1 | die << 4
}

/// Every byte 0x01.
const ONES: u128 = u128::MAX / 0xFF;
/// 0xFF in byte j of entry j.
const BYTE_MASKS: [u128; 16] = {
    let mut m = [0; 16];
    let mut j = 0;
    while j < 16 {
        m[j] = 0xFF << (8 * j);
        j += 1;
    }
    m
};
/// Every byte 0x7F.
const LOW7: u128 = ONES * 0x7F;
/// The `pos` bytes (0..14) of a state's `u128`.
const POS_BYTES: u128 = (1 << (16 * KMAX)) - 1;

/// 0x80 in every byte of `x` that is zero, 0 in every other byte (exact: no carries between
/// bytes, since `(x & 0x7F) + 0x7F` stays below 0x100).
#[inline(always)]
fn zero_bytes(x: u128) -> u128 {
    !(((x & LOW7) + LOW7) | x | LOW7)
}

/// Bit j set for every byte j (of 16) of `m` whose top bit is set; `m` has no other bits.
#[inline(always)]
fn byte_bits(m: u128) -> u32 {
    // Byte j's bit, moved to bit 0 of the byte, lands at bit 56 + j of the product; the
    // other partial products stay below bit 56 or above bit 63 and never carry into them.
    const GATHER: u64 = 0x0102_0408_1020_4080;
    let lo = ((m as u64) >> 7).wrapping_mul(GATHER) >> 56;
    let hi = (((m >> 64) as u64) >> 7).wrapping_mul(GATHER) >> 56;
    (lo | hi << 8) as u32
}

/// Bit `i` (i < 14) set when `pos[i]` of the state `v` is on the board (not `OFF`).
#[inline(always)]
fn on_board(v: u128) -> u32 {
    !byte_bits(zero_bytes(!v)) & ((1 << (2 * KMAX)) - 1)
}

/// EinStein würfelt nicht! on a W x H board with k pieces per side.
#[derive(Clone, PartialEq)]
pub struct Ewn {
    w: u8,
    h: u8,
    k: u8,
    /// Bits per piece field of the key.
    bits: u32,
    /// Bits of the die field of the key.
    die_bits: u32,
    red_start: [u8; KMAX],
    blue_start: [u8; KMAX],
    /// Per side and square: bit `dir` set when the step in direction `dir` stays on the
    /// board (0 for squares off the board, `OFF` included). Boxed to keep the game value
    /// (and `AnyGame`) small.
    step_mask: Box<[[u8; 256]; 2]>,
    /// Per side and direction: the square index difference of a step (wrapping).
    step_delta: [[u8; 3]; 2],
    /// The target corner of each side.
    target: [u8; 2],
    /// Per side: 0xFF in the `u128` bytes of its pieces (`pos[base..base + k]`).
    side_bytes: [u128; 2],
    /// The die roll's outcomes, `1/k` each.
    die_outcomes: [ChanceOutcome; KMAX],
    /// The running sums of `die_outcomes`' probabilities, added in the order
    /// `sample_outcome` adds them (so the fused playout draws the same die).
    die_sums: [f64; KMAX],
}

impl std::fmt::Debug for Ewn {
    // The tables follow from the parameters; leave them out.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ewn")
            .field("w", &self.w)
            .field("h", &self.h)
            .field("k", &self.k)
            .field("bits", &self.bits)
            .field("die_bits", &self.die_bits)
            .field("red_start", &self.red_start)
            .field("blue_start", &self.blue_start)
            .finish()
    }
}

/// Bit length of `x` (0 for 0).
fn bit_len(x: u32) -> u32 {
    32 - x.leading_zeros()
}

fn factorial(n: usize) -> usize {
    (1..=n).product()
}

fn colour_name(p: Player) -> &'static str {
    match p {
        Player::P0 => "red",
        Player::P1 => "blue",
    }
}

fn colour_letter(p: Player) -> char {
    match p {
        Player::P0 => 'R',
        Player::P1 => 'B',
    }
}

/// The first `k` squares of a `w` x `h` board in the order of (r + c, then r).
fn start_squares(w: u32, h: u32, k: usize) -> Vec<u8> {
    let mut sq: Vec<(u32, u32)> = (0..h).flat_map(|r| (0..w).map(move |c| (r, c))).collect();
    sq.sort_by_key(|&(r, c)| (r + c, r));
    sq.iter().take(k).map(|&(r, c)| (r * w + c) as u8).collect()
}

/// Why `k` pieces do not fit a `w` x `h` board, or `None` when they do (board size checked
/// by the caller).
fn k_problem(w: u32, h: u32, k: u32) -> Option<String> {
    if k == 0 || k as usize > KMAX {
        return Some(format!("k = {k} is outside 1..={KMAX}"));
    }
    let n = w * h;
    // Rotating by 180 degrees reverses the order (r + c, then r), so blue's start squares
    // are the last k of that order: the two sides meet exactly when 2k > W*H.
    if 2 * k > n {
        return Some(format!(
            "red's {k} start squares would meet blue's: 2k must be at most W*H = {n}"
        ));
    }
    let need = 2 * k * bit_len(n) + 1 + bit_len(k);
    if need > 64 {
        return Some(format!(
            "the key would need {need} bits (2k*bits(W*H) + 1 + bits(k)), more than 64"
        ));
    }
    None
}

fn square_name_wh(w: u32, s: u8) -> String {
    let (r, c) = (s as u32 / w, s as u32 % w);
    format!("{}{}", (b'a' + c as u8) as char, r + 1)
}

impl Ewn {
    /// The game on a `w` x `h` board with `k` pieces per side; the error says what is allowed.
    pub fn new(w: u32, h: u32, k: u32) -> Result<Ewn, String> {
        if !(2..=MAX_DIM).contains(&w) || !(2..=MAX_DIM).contains(&h) {
            return Err(format!(
                "board {w}x{h} is not allowed: W and H must be in 2..={MAX_DIM}"
            ));
        }
        if let Some(why) = k_problem(w, h, k) {
            let max_k = (1..=KMAX as u32)
                .take_while(|&kk| k_problem(w, h, kk).is_none())
                .last()
                .unwrap_or(0);
            return Err(format!(
                "k = {k} is not allowed on a {w}x{h} board ({why}); allowed: k in 1..={max_k} \
                 (k pieces per side must fit their start corner without meeting the other \
                 side's start squares, and the position key must fit 64 bits)"
            ));
        }
        let ku = k as usize;
        let n = w * h;
        let mut red_start = [OFF; KMAX];
        let mut blue_start = [OFF; KMAX];
        for (j, s) in start_squares(w, h, ku).into_iter().enumerate() {
            red_start[j] = s;
            blue_start[j] = (n - 1) as u8 - s;
        }
        let mut step_mask = Box::new([[0u8; 256]; 2]);
        for r in 0..h {
            for c in 0..w {
                let sq = (r * w + c) as usize;
                // Directions 0 diagonal, 1 horizontal, 2 vertical.
                let red = [r + 1 < h && c + 1 < w, c + 1 < w, r + 1 < h];
                let blue = [r > 0 && c > 0, c > 0, r > 0];
                for dir in 0..3 {
                    step_mask[0][sq] |= u8::from(red[dir]) << dir;
                    step_mask[1][sq] |= u8::from(blue[dir]) << dir;
                }
            }
        }
        let red_delta = [w as u8 + 1, 1, w as u8];
        let blue_delta = red_delta.map(|d| d.wrapping_neg());
        let prob = 1.0 / ku as f64;
        let mut die_outcomes = [ChanceOutcome {
            outcome: 0,
            prob: 0.0,
        }; KMAX];
        for (o, x) in die_outcomes.iter_mut().enumerate().take(ku) {
            *x = ChanceOutcome {
                outcome: o as Outcome,
                prob,
            };
        }
        let mut die_acc = 0.0;
        Ok(Ewn {
            w: w as u8,
            h: h as u8,
            k: k as u8,
            bits: bit_len(n),
            die_bits: bit_len(k),
            red_start,
            blue_start,
            step_mask,
            step_delta: [red_delta, blue_delta],
            target: [(n - 1) as u8, 0],
            side_bytes: [0, ku].map(|base| ((1u128 << (8 * ku)) - 1) << (8 * base)),
            die_outcomes,
            die_sums: die_outcomes.map(|x| {
                die_acc += x.prob;
                die_acc
            }),
        })
    }

    pub(crate) fn from_spec(spec: &VariantSpec) -> Result<Ewn, GameError> {
        let d = parse_dims(
            spec,
            &spec.params,
            3,
            "WxHxk (width, height, pieces per side), e.g. ewn:3x3x3 or ewn:5x5x6",
        )?;
        spec.finish(&[])?;
        Ewn::new(d[0], d[1], d[2]).map_err(|e| spec.error(e))
    }

    /// Board width W.
    pub(crate) fn width(&self) -> usize {
        self.w as usize
    }

    /// Board height H.
    pub(crate) fn height(&self) -> usize {
        self.h as usize
    }

    /// Pieces per side (and die faces) k.
    pub fn pieces(&self) -> usize {
        self.k as usize
    }

    /// The start squares of `p` (index `r*W + c`), in placement order.
    pub(crate) fn start_squares(&self, p: Player) -> &[u8] {
        match p {
            Player::P0 => &self.red_start[..self.k as usize],
            Player::P1 => &self.blue_start[..self.k as usize],
        }
    }

    /// The square (index) of `p`'s piece `n` (1..=k), or `None` when it is not on the board.
    pub fn piece_square(&self, s: &EwnState, p: Player, n: usize) -> Option<usize> {
        if n == 0 || n > self.k as usize {
            return None;
        }
        match s.pos()[self.base(p) + n - 1] {
            OFF => None,
            sq => Some(sq as usize),
        }
    }

    /// The die value of a decision state (`None` for chance and terminal states).
    pub fn die(&self, s: &EwnState) -> Option<u8> {
        (s.phase() == Phase::Move).then_some(s.die())
    }

    /// The start positions S_test: every red placement x blue placement x die value, as
    /// decision states of red (k!^2 * k of them: 108 for 3x3x3 and 3x4x3, 2,304 for 3x3x4).
    /// Ordered by red's placement outcome, then blue's, then the die.
    pub fn test_positions(&self) -> Vec<EwnState> {
        let kf = factorial(self.k as usize) as Outcome;
        let start = self.initial_state();
        let mut out = Vec::with_capacity((kf as usize).pow(2) * self.k as usize);
        for o1 in 0..kf {
            let s1 = self.apply_chance(&start, o1);
            for o2 in 0..kf {
                let s2 = self.apply_chance(&s1, o2);
                for d in 0..self.k as Outcome {
                    out.push(self.apply_chance(&s2, d));
                }
            }
        }
        out
    }

    /// A state from its parts, checked as `state_from_key` checks a key (see [`classify`]).
    ///
    /// [`classify`]: Ewn::classify
    fn build(&self, pos: [u8; 2 * KMAX], side: Player, die: u8) -> Result<EwnState, String> {
        let phase = self.classify(&pos, side, die)?;
        let mut s = EwnState::new(pos, side, phase, die, NO_MOVERS);
        if phase == Phase::Move {
            s = EwnState::new(pos, side, phase, die, self.movable(s.v, side, die));
        }
        Ok(s)
    }

    /// The phase of a (pieces, side, die) triple, or why no state has it. Piece squares are
    /// assumed on the board and distinct.
    fn classify(&self, pos: &[u8; 2 * KMAX], side: Player, die: u8) -> Result<Phase, String> {
        let k = self.k as usize;
        let red = &pos[..k];
        let blue = &pos[k..2 * k];
        let red_n = red.iter().filter(|&&s| s != OFF).count();
        let blue_n = blue.iter().filter(|&&s| s != OFF).count();
        if red_n == 0 && blue_n == 0 {
            return if side == Player::P0 && die == 0 {
                Ok(Phase::PlaceRed)
            } else {
                Err("no piece on the board: only the start state (`red place`) has that".into())
            };
        }
        if blue_n == 0 && side == Player::P0 {
            let placed = red_n == k
                && red
                    .iter()
                    .all(|s| self.start_squares(Player::P0).contains(s));
            return if placed && die == 0 {
                Ok(Phase::PlaceBlue)
            } else {
                Err(
                    "blue has no piece with red to move: only blue's placement (`blue place`, \
                     red's full set on its start squares, no die) has that"
                        .into(),
                )
            };
        }
        let red_target = (self.h as usize * self.w as usize - 1) as u8;
        let red_wins = blue_n == 0 || red.contains(&red_target);
        let blue_wins = red_n == 0 || blue.contains(&0);
        match (red_wins, blue_wins) {
            (true, true) => Err("both sides have won".into()),
            (false, false) => match die {
                0 => Ok(Phase::Roll),
                d if d <= self.k => Ok(Phase::Move),
                d => Err(format!("die {d} is outside 1..={}", self.k)),
            },
            (rw, _) => {
                let winner = if rw { Player::P0 } else { Player::P1 };
                if side == winner.other() && die == 0 {
                    Ok(Phase::Over)
                } else {
                    Err(format!(
                        "{} has won: the position is terminal, with the loser as the side and \
                         no die",
                        colour_name(winner)
                    ))
                }
            }
        }
    }

    #[inline]
    fn base(&self, p: Player) -> usize {
        match p {
            Player::P0 => 0,
            Player::P1 => self.k as usize,
        }
    }

    /// The state after `side`'s piece at `pos` index `i` steps to square `to` in the state
    /// `v` (a legal step): whatever stands on `to` is captured, and the opponent rolls next
    /// or has lost.
    #[inline(always)]
    fn moved(&self, v: u128, side: Player, i: usize, to: u8) -> EwnState {
        // Whatever stands on `to` is captured (set OFF), then piece i moves there (byte i
        // taken from `to` in every byte: a table mask, not a variable 128-bit shift).
        let spread = ONES * u128::from(to);
        let hit = zero_bytes(v ^ spread) & POS_BYTES;
        let mut v = v | hit | (hit - (hit >> 7));
        v = v & !BYTE_MASKS[i] | spread & BYTE_MASKS[i];
        // The opponent loses on the mover's target, or when all its bytes are OFF.
        let opp = side.other();
        let won = to == self.target[side.index()] || !v & self.side_bytes[opp.index()] == 0;
        let meta = pack_meta(opp, if won { Phase::Over } else { Phase::Roll }, 0);
        v = v & POS_BYTES | u128::from(meta) << (8 * META) | u128::from(NO_MOVERS) << (8 * MOVERS);
        EwnState { v }
    }

    /// A roll of `side`'s die in the state `v` (its `Roll` phase), drawn as `sample_outcome`
    /// draws it, then a uniformly random legal move, applied: what the generic playout's
    /// chance step and decision do, without building the decision state in between.
    #[inline(always)]
    fn roll_and_move<D: PlayoutDraws>(&self, v: u128, side: Player, draws: &mut D) -> EwnState {
        let k = self.k as usize;
        let u = draws.unit();
        let die = crate::rng::pick_by_sums(u, self.die_sums[..k].iter().copied(), k) as u8 + 1;
        self.random_step(v, side, self.movable(v, side, die), draws)
    }

    /// A uniformly random legal move of a decision state (pieces `v`, `side` to move, the
    /// die's `movers`), applied: one uniform index into the legal actions, ascending (as
    /// `legal_actions` lists them; a table lookup, no loop whose length the branch predictor
    /// would have to guess).
    #[inline(always)]
    fn random_step<D: PlayoutDraws>(
        &self,
        v: u128,
        side: Player,
        movers: u8,
        draws: &mut D,
    ) -> EwnState {
        let (list, n) = &ACTION_LISTS[self.steps_of(v, side, movers)];
        let a = usize::from(list[draws.index(usize::from(*n))]);
        let i = movers >> (4 * usize::from(a >= 3)) & NO_MOVER;
        let from = EwnState { v }.byte(usize::from(i));
        let to = from.wrapping_add(self.step_delta[side.index()][a % 3]);
        self.moved(v, side, usize::from(i), to)
    }

    /// The `movers` of a decision state with pieces `v` (its `u128`), `side` to move and
    /// die `d`: piece d if it is on the board, else the next-lower (h = 0) and next-higher
    /// (h = 1) pieces the side has.
    #[inline(always)]
    fn movable(&self, v: u128, side: Player, d: u8) -> u8 {
        let base = self.base(side) as u32;
        let d = u32::from(d);
        let own = on_board(v) >> base & ((1 << self.k) - 1);
        let die_bit = 1 << (d - 1);
        if own & die_bit != 0 {
            return (base + d - 1) as u8 | NO_MOVER << 4;
        }
        let below = own & (die_bit - 1);
        let above = own & !(2 * die_bit - 1);
        let lo = if below != 0 {
            (base + 31 - below.leading_zeros()) as u8
        } else {
            NO_MOVER
        };
        let hi = if above != 0 {
            (base + above.trailing_zeros()) as u8
        } else {
            NO_MOVER
        };
        lo | hi << 4
    }

    /// The legal actions of a decision state as a mask (bit `3h + dir`).
    #[inline]
    fn action_mask(&self, s: &EwnState) -> usize {
        self.steps_of(s.v, s.side(), s.byte(MOVERS))
    }

    /// The legal actions as a mask (bit `3h + dir`) of `side` with pieces `v` and the die's
    /// `movers` (the `movers` byte's layout).
    #[inline(always)]
    fn steps_of(&self, v: u128, side: Player, movers: u8) -> usize {
        let masks = &self.step_mask[side.index()];
        let mut m = 0;
        for h in 0..2 {
            let i = usize::from(movers >> (4 * h) & NO_MOVER);
            if i < 2 * KMAX {
                m |= usize::from(masks[usize::from(EwnState { v }.byte(i))]) << (3 * h);
            }
        }
        m
    }

    /// The moved piece's `pos` index, its origin and destination, for a legal action.
    fn decode_action(&self, s: &EwnState, a: Action) -> Option<(usize, u8, u8)> {
        if s.phase() != Phase::Move || a >= 6 || self.action_mask(s) >> a & 1 == 0 {
            return None;
        }
        let i = s.mover(usize::from(a >= 3)) as usize;
        let from = s.pos()[i];
        let to = from.wrapping_add(self.step_delta[s.side().index()][a as usize % 3]);
        Some((i, from, to))
    }

    fn square_name(&self, s: u8) -> String {
        square_name_wh(self.w as u32, s)
    }

    /// The placement sequence `p[0..k]` of outcome `o` (lexicographic rank).
    fn unrank(&self, mut o: usize) -> [u8; KMAX] {
        let k = self.k as usize;
        let mut avail = [0u8; KMAX];
        for (i, a) in avail.iter_mut().enumerate().take(k) {
            *a = i as u8 + 1;
        }
        let mut out = [0u8; KMAX];
        for (j, slot) in out.iter_mut().enumerate().take(k) {
            let f = factorial(k - 1 - j);
            let idx = o / f;
            o %= f;
            *slot = avail[idx];
            avail.copy_within(idx + 1..k - j, idx);
        }
        out
    }

    /// The piece (colour, number) on square `sq`, if any.
    fn piece_on(&self, s: &EwnState, sq: u8) -> Option<(Player, usize)> {
        let k = self.k as usize;
        let i = s.pos()[..2 * k].iter().position(|&x| x == sq)?;
        Some(if i < k {
            (Player::P0, i + 1)
        } else {
            (Player::P1, i - k + 1)
        })
    }

    /// The state after placement outcome `o` (or a caller's non-placement state unchanged).
    #[inline(never)]
    fn place(&self, s: &EwnState, o: Outcome) -> EwnState {
        let (base, squares, next) = match s.phase() {
            Phase::PlaceRed => (0, &self.red_start, Phase::PlaceBlue),
            Phase::PlaceBlue => (self.k as usize, &self.blue_start, Phase::Roll),
            Phase::Roll | Phase::Move | Phase::Over => {
                debug_assert!(false, "not a placement: {s:?}");
                return *s;
            }
        };
        debug_assert!((o as usize) < factorial(self.k as usize), "outcome {o}");
        let mut b = s.bytes();
        let perm = self.unrank(o as usize);
        for j in 0..self.k as usize {
            b[base + perm[j] as usize - 1] = squares[j];
        }
        b[META] = pack_meta(Player::P0, next, 0);
        EwnState::from_bytes(b)
    }

    fn bad_key(&self, key: u64, reason: impl Into<String>) -> GameError {
        GameError::bad_key(self.variant(), key, reason)
    }
}

impl Game for Ewn {
    type State = EwnState;
    type Key = u64;

    fn variant(&self) -> String {
        format!("ewn:{}x{}x{}", self.w, self.h, self.k)
    }

    fn num_actions(&self) -> usize {
        6
    }

    fn initial_state(&self) -> EwnState {
        EwnState::new([OFF; 2 * KMAX], Player::P0, Phase::PlaceRed, 0, NO_MOVERS)
    }

    #[inline(always)]
    fn turn(&self, s: &EwnState) -> Turn {
        match s.phase() {
            Phase::PlaceRed | Phase::PlaceBlue | Phase::Roll => Turn::Chance,
            Phase::Move => Turn::Player(s.side()),
            Phase::Over => Turn::Terminal(GameResult::Win(s.side().other())),
        }
    }

    #[inline(always)]
    fn legal_actions(&self, s: &EwnState, out: &mut Vec<Action>) {
        out.clear();
        if s.phase() != Phase::Move {
            return;
        }
        let (list, n) = &ACTION_LISTS[self.action_mask(s)];
        // A fixed-size copy (no memcpy call), then the length.
        out.extend_from_slice(list);
        out.truncate(*n as usize);
    }

    #[inline(always)]
    fn apply(&self, s: &EwnState, a: Action) -> EwnState {
        debug_assert!(
            self.decode_action(s, a).is_some(),
            "illegal action {a} in {s:?}"
        );
        if s.phase() != Phase::Move || a >= 6 {
            return *s;
        }
        let side = s.side();
        let si = side.index();
        let h = usize::from(a >= 3);
        let dir = a as usize - 3 * h;
        let i = s.mover(h) as usize;
        // An illegal action (a caller bug) leaves the state as it is.
        if i >= 2 * KMAX {
            return *s;
        }
        let from = s.byte(i);
        if self.step_mask[si][from as usize] >> dir & 1 == 0 {
            return *s;
        }
        let to = from.wrapping_add(self.step_delta[si][dir]);
        self.moved(s.v, side, i, to)
    }

    /// The generic playout's draws without its lists: a roll is one `f64` compared with the
    /// running sums of the die's probabilities (`sample_outcome`'s count of sums at most
    /// the draw), a move one uniform index among the set bits of the action mask
    /// (ascending, as `legal_actions` lists them). A roll is always followed by a move (a
    /// side with no piece has lost), so the loop is roll-and-move until the game is over.
    /// From a placement state (the start) the generic loop plays.
    #[inline]
    fn fused_playout<D: PlayoutDraws>(
        &self,
        s: &EwnState,
        draws: &mut D,
    ) -> Option<(GameResult, u32)> {
        let mut s = *s;
        let mut plies = 0;
        match s.phase() {
            Phase::PlaceRed | Phase::PlaceBlue => return None,
            Phase::Move => {
                s = self.random_step(s.v, s.side(), s.byte(MOVERS), draws);
                plies += 1;
            }
            Phase::Roll | Phase::Over => {}
        }
        while s.phase() != Phase::Over {
            s = self.roll_and_move(s.v, s.side(), draws);
            plies += 1;
        }
        Some((GameResult::Win(s.side().other()), plies))
    }

    #[inline(always)]
    fn chance_outcomes(&self, s: &EwnState, out: &mut Vec<ChanceOutcome>) {
        out.clear();
        let n = match s.phase() {
            Phase::Roll => {
                // A fixed-size copy (no memcpy call), then the length.
                out.extend_from_slice(&self.die_outcomes);
                out.truncate(self.k as usize);
                return;
            }
            Phase::PlaceRed | Phase::PlaceBlue => factorial(self.k as usize),
            Phase::Move | Phase::Over => return,
        };
        let prob = 1.0 / n as f64;
        out.extend((0..n).map(|o| ChanceOutcome {
            outcome: o as Outcome,
            prob,
        }));
    }

    #[inline(always)]
    fn apply_chance(&self, s: &EwnState, o: Outcome) -> EwnState {
        match s.phase() {
            Phase::Roll => {
                debug_assert!((o as usize) < self.k as usize, "die outcome {o}");
                let side = s.side();
                let die = o as u8 + 1;
                let movers = self.movable(s.v, side, die);
                let meta = pack_meta(side, Phase::Move, die);
                EwnState {
                    v: s.v & POS_BYTES
                        | u128::from(meta) << (8 * META)
                        | u128::from(movers) << (8 * MOVERS),
                }
            }
            _ => self.place(s, o),
        }
    }

    #[inline]
    fn key(&self, s: &EwnState) -> u64 {
        let k2 = 2 * self.k as usize;
        let mut key = 0u64;
        for (i, &x) in s.pos()[..k2].iter().enumerate() {
            let v = if x == OFF { 0 } else { x as u64 + 1 };
            key |= v << (i as u32 * self.bits);
        }
        let off = k2 as u32 * self.bits;
        key | (s.side().index() as u64) << off | (s.die() as u64) << (off + 1)
    }

    fn state_from_key(&self, key: u64) -> Result<EwnState, GameError> {
        let k2 = 2 * self.k as usize;
        let off = k2 as u32 * self.bits;
        let used = off + 1 + self.die_bits;
        if used < 64 && key >> used != 0 {
            return Err(self.bad_key(key, format!("bits above bit {used} must be 0")));
        }
        let n = self.w as u64 * self.h as u64;
        let field = (1u64 << self.bits) - 1;
        let mut pos = [OFF; 2 * KMAX];
        for (i, p) in pos.iter_mut().enumerate().take(k2) {
            let v = key >> (i as u32 * self.bits) & field;
            if v > n {
                return Err(self.bad_key(
                    key,
                    format!("piece field {i} is {v}; allowed 0 (off the board) or 1..={n}"),
                ));
            }
            if v > 0 {
                *p = (v - 1) as u8;
            }
        }
        for i in 0..k2 {
            if pos[i] != OFF && pos[..i].contains(&pos[i]) {
                return Err(self.bad_key(
                    key,
                    format!("two pieces on square {}", self.square_name(pos[i])),
                ));
            }
        }
        let side = Player::from_index((key >> off & 1) as usize);
        let die = (key >> (off + 1)) & ((1u64 << self.die_bits) - 1);
        self.build(pos, side, die as u8)
            .map_err(|e| self.bad_key(key, e))
    }

    fn action_name(&self, s: &EwnState, a: Action) -> String {
        let Some((i, from, to)) = self.decode_action(s, a) else {
            return format!("action {a} (not legal here)");
        };
        let k = self.k as usize;
        let n = if i < k { i + 1 } else { i - k + 1 };
        let mut name = format!(
            "{}{} {}-{}",
            colour_letter(s.side()),
            n,
            self.square_name(from),
            self.square_name(to)
        );
        if let Some((p, m)) = self.piece_on(s, to) {
            name.push_str(&format!(" x{}{}", colour_letter(p), m));
        }
        name
    }

    fn outcome_name(&self, s: &EwnState, o: Outcome) -> String {
        match s.phase() {
            Phase::PlaceRed | Phase::PlaceBlue => {
                let (p, squares) = if s.phase() == Phase::PlaceRed {
                    (Player::P0, &self.red_start)
                } else {
                    (Player::P1, &self.blue_start)
                };
                if o as usize >= factorial(self.k as usize) {
                    return format!("outcome {o} (not an outcome here)");
                }
                let perm = self.unrank(o as usize);
                let places: Vec<String> = (0..self.k as usize)
                    .map(|j| {
                        format!(
                            "{}{}={}",
                            colour_letter(p),
                            perm[j],
                            self.square_name(squares[j])
                        )
                    })
                    .collect();
                format!("{} places {}", colour_name(p), places.join(" "))
            }
            Phase::Roll if (o as usize) < self.k as usize => format!("die {}", o + 1),
            _ => format!("outcome {o} (not an outcome here)"),
        }
    }

    fn render(&self, s: &EwnState) -> String {
        let (w, h) = (self.w as usize, self.h as usize);
        let mut out = String::from("  ");
        for c in 0..w {
            out.push_str(&format!(" {} ", (b'a' + c as u8) as char));
        }
        out.push('\n');
        for r in 0..h {
            out.push_str(&format!("{:>2}", r + 1));
            for c in 0..w {
                match self.piece_on(s, (r * w + c) as u8) {
                    Some((p, n)) => out.push_str(&format!(" {}{}", colour_letter(p), n)),
                    None => out.push_str("  ."),
                }
            }
            out.push('\n');
        }
        let side = colour_name(s.side());
        out.push_str(&match s.phase() {
            Phase::PlaceRed => "red places its pieces".to_string(),
            Phase::PlaceBlue => "blue places its pieces".to_string(),
            Phase::Roll => format!("{side} to roll"),
            Phase::Move => format!("{side} to move, die {}", s.die()),
            Phase::Over => format!("{} wins", colour_name(s.side().other())),
        });
        out.push('\n');
        out
    }

    fn notation(&self, s: &EwnState) -> String {
        let (w, h) = (self.w as usize, self.h as usize);
        let mut out = String::new();
        for r in 0..h {
            if r > 0 {
                out.push('/');
            }
            for c in 0..w {
                match self.piece_on(s, (r * w + c) as u8) {
                    Some((p, n)) => {
                        out.push(colour_letter(p));
                        out.push((b'0' + n as u8) as char);
                    }
                    None => out.push('.'),
                }
            }
        }
        let (who, what) = match s.phase() {
            Phase::PlaceRed => (Player::P0, "place".to_string()),
            Phase::PlaceBlue => (Player::P1, "place".to_string()),
            Phase::Roll => (s.side(), "roll".to_string()),
            Phase::Move => (s.side(), s.die().to_string()),
            Phase::Over => (s.side().other(), "wins".to_string()),
        };
        format!("{out} {} {what}", colour_name(who))
    }

    fn parse_notation(&self, text: &str) -> Result<EwnState, GameError> {
        let bad = |reason: String| GameError::bad_position(self.variant(), text, reason);
        let tokens: Vec<&str> = text.split_whitespace().collect();
        let [board, who, what] = tokens[..] else {
            return Err(bad(
                "expected `<board> <red|blue> <die 1..k|roll|place|wins>`, e.g. \
                 `R2R3./R1.B3/.B1B2 red 2`"
                    .into(),
            ));
        };
        let (w, h, k) = (self.w as usize, self.h as usize, self.k as usize);
        let rows: Vec<&str> = board.split('/').collect();
        if rows.len() != h {
            return Err(bad(format!(
                "the board has {} rows separated by `/`; expected {h}",
                rows.len()
            )));
        }
        let mut pos = [OFF; 2 * KMAX];
        for (r, row) in rows.iter().enumerate() {
            let mut chars = row.chars();
            let mut c = 0;
            while let Some(ch) = chars.next() {
                if c >= w {
                    return Err(bad(format!("row {} has more than {w} squares", r + 1)));
                }
                let sq = (r * w + c) as u8;
                c += 1;
                let base = match ch {
                    '.' => continue,
                    'R' => 0,
                    'B' => k,
                    other => {
                        return Err(bad(format!(
                            "unexpected `{other}` in row {}; squares are `.`, `R1`..`R{k}` or \
                             `B1`..`B{k}`",
                            r + 1
                        )));
                    }
                };
                let n = chars.next().and_then(|d| d.to_digit(10)).unwrap_or(0) as usize;
                if !(1..=k).contains(&n) {
                    return Err(bad(format!(
                        "`{ch}` in row {} must be followed by a piece number 1..={k}",
                        r + 1
                    )));
                }
                if pos[base + n - 1] != OFF {
                    return Err(bad(format!("piece {ch}{n} appears twice")));
                }
                pos[base + n - 1] = sq;
            }
            if c != w {
                return Err(bad(format!("row {} has {c} squares; expected {w}", r + 1)));
            }
        }
        let player = match who {
            "red" => Player::P0,
            "blue" => Player::P1,
            other => return Err(bad(format!("side `{other}` is not `red` or `blue`"))),
        };
        let (side, die, want) = match what {
            "place" => (Player::P0, 0, Some(player)),
            "roll" => (player, 0, None),
            "wins" => (player.other(), 0, None),
            d => match d.parse::<u8>() {
                Ok(d) if (1..=self.k).contains(&d) => (player, d, None),
                _ => {
                    return Err(bad(format!(
                        "phase `{d}` is not a die value 1..={k}, `roll`, `place` or `wins`"
                    )));
                }
            },
        };
        let s = self.build(pos, side, die).map_err(bad)?;
        let expected = match s.phase() {
            Phase::PlaceRed => what == "place" && want == Some(Player::P0),
            Phase::PlaceBlue => what == "place" && want == Some(Player::P1),
            Phase::Roll => what == "roll",
            Phase::Move => die > 0,
            Phase::Over => what == "wins",
        };
        if !expected {
            return Err(bad(format!(
                "the board does not fit `{who} {what}`; it reads as `{}`",
                self.notation(&s)
                    .split_once(' ')
                    .map_or("", |(_, tail)| tail)
            )));
        }
        Ok(s)
    }
}

/// EWN cannot cycle (pieces only move forward, captures only remove pieces), so it is solved
/// by memoised expectimax. The literature's variants have 0.37 to 6.3 million positions; the
/// limit below keeps solves within a few GB.
impl crate::solver::Solvable for Ewn {
    fn method(&self) -> crate::solver::Method {
        crate::solver::Method::Acyclic
    }

    fn check_solvable(&self) -> Result<(), String> {
        let (w, h, k) = (self.width(), self.height(), self.pieces());
        if w * h <= 12 && w * h * k <= 36 {
            Ok(())
        } else {
            Err(format!(
                "ewn:{w}x{h}x{k} is too large; the solver takes boards of at most 12 squares \
                 with W*H*k <= 36 (3x3x3, 3x3x4, 3x4x3, ...)"
            ))
        }
    }

    fn level(&self, _: &EwnState) -> u32 {
        0
    }

    fn test_positions(&self) -> Vec<EwnState> {
        Ewn::test_positions(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::AnyGame;

    /// The fused playout is the generic one bit for bit: from every state along random games
    /// (chance and decision states, both sides, captures and wins) of three sizes, the same
    /// result and plies, and the stream left at the same place.
    #[test]
    fn the_fused_playout_draws_what_the_generic_loop_draws() {
        use crate::play::{Scratch, generic_playout, random_playout, step_chance};
        use crate::rng::{stream, uniform_index};
        use rand::Rng;
        let mut scratch = Scratch::new();
        let mut checked = 0;
        for (v, w, h, k) in [("3x3x3", 3, 3, 3), ("4x4x4", 4, 4, 4), ("5x5x6", 5, 5, 6)] {
            let g = Ewn::new(w, h, k).unwrap();
            let mut walk = stream(7, v);
            for game in 0..200u64 {
                let mut s = g.initial_state();
                loop {
                    let mut fused = stream(game, "fused");
                    let mut generic = fused.clone();
                    let a = random_playout(&g, s, &mut fused, &mut scratch);
                    let b = generic_playout(&g, s, &mut generic, &mut scratch);
                    assert_eq!(a, b, "{v} game {game}: {s:?}");
                    assert_eq!(fused.next_u64(), generic.next_u64(), "{v}: the stream");
                    checked += 1;
                    s = match g.turn(&s) {
                        Turn::Terminal(_) => break,
                        Turn::Chance => step_chance(&g, &s, &mut walk, &mut scratch),
                        Turn::Player(_) => {
                            let a = g.random_action(&s, &mut scratch.actions, &mut |n| {
                                uniform_index(&mut walk, n)
                            });
                            g.apply(&s, a)
                        }
                    };
                }
            }
        }
        assert!(checked > 10_000, "{checked} states");
    }
    use std::collections::HashSet;
    use std::hash::{BuildHasherDefault, Hasher};

    /// A multiplicative hasher for u64 keys: the counts below only test membership, so the
    /// hasher cannot change a result, and it is several times faster than SipHash.
    #[derive(Default)]
    struct KeyHasher(u64);

    impl Hasher for KeyHasher {
        fn finish(&self) -> u64 {
            self.0
        }
        fn write(&mut self, bytes: &[u8]) {
            for &b in bytes {
                self.write_u64(b as u64);
            }
        }
        fn write_u64(&mut self, x: u64) {
            self.0 = (self.0 ^ x)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .rotate_left(29);
        }
    }

    fn game(v: &str) -> Ewn {
        match v.parse::<AnyGame>().unwrap() {
            AnyGame::Ewn(g) => g,
            other => panic!("{v} parsed as {other:?}"),
        }
    }

    fn pos(g: &Ewn, text: &str) -> EwnState {
        g.parse_notation(text)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn legal(g: &Ewn, s: &EwnState) -> Vec<Action> {
        let mut v = Vec::new();
        g.legal_actions(s, &mut v);
        v
    }

    fn names(g: &Ewn, s: &EwnState) -> Vec<String> {
        legal(g, s).iter().map(|&a| g.action_name(s, a)).collect()
    }

    /// The word-wide byte helpers against byte-by-byte loops, on every single-byte value in
    /// every position and on mixed words.
    #[test]
    fn byte_helpers_match_byte_loops() {
        let check = |b: [u8; 16]| {
            let v = u128::from_le_bytes(b);
            let mut zero = 0u32;
            let mut on = 0u32;
            for (j, &x) in b.iter().enumerate() {
                zero |= u32::from(x == 0) << j;
                if j < 2 * KMAX {
                    on |= u32::from(x != OFF) << j;
                }
            }
            assert_eq!(byte_bits(zero_bytes(v)), zero, "{b:?}");
            assert_eq!(on_board(v), on, "{b:?}");
        };
        for j in 0..16 {
            for x in 0..=255u8 {
                let mut b = [OFF; 16];
                b[j] = x;
                check(b);
                let mut b = [0x80; 16];
                b[j] = x;
                check(b);
            }
        }
        let mut x = 0x9E37_79B9_7F4A_7C15_u128;
        for _ in 0..10_000 {
            x = x.wrapping_mul(0x2545_F491_4F6C_DD1D_0000_0000_0000_0001) ^ x >> 61;
            let mut b = x.to_le_bytes();
            // Mostly OFF, zero and small values, as in real states.
            for (j, y) in b.iter_mut().enumerate() {
                match (x >> (j * 3)) & 3 {
                    0 => *y = OFF,
                    1 => *y = 0,
                    2 => *y %= 25,
                    _ => {}
                }
            }
            check(b);
        }
    }

    #[test]
    fn start_squares_of_the_literature_variants() {
        let sq = |v: &str, p| game(v).start_squares(p).to_vec();
        // Indices r*W + c.
        assert_eq!(sq("ewn:3x3x3", Player::P0), [0, 1, 3]);
        assert_eq!(sq("ewn:3x3x3", Player::P1), [8, 7, 5]);
        assert_eq!(sq("ewn:3x4x3", Player::P0), [0, 1, 3]);
        assert_eq!(sq("ewn:3x4x3", Player::P1), [11, 10, 8]);
        assert_eq!(sq("ewn:3x3x4", Player::P0), [0, 1, 3, 2]);
        assert_eq!(sq("ewn:3x3x4", Player::P1), [8, 7, 5, 6]);
        // 5x5x6: the triangle r + c <= 2.
        assert_eq!(sq("ewn:5x5x6", Player::P0), [0, 1, 5, 2, 6, 10]);
        assert_eq!(sq("ewn:5x5x6", Player::P1), [24, 23, 19, 22, 18, 14]);
        let g = game("ewn:3x3x3");
        let s = g.test_positions()[0];
        assert_eq!(g.notation(&s), "R1R2./R3.B3/.B2B1 red 1");
    }

    #[test]
    fn variant_bounds() {
        for ok in [
            "ewn:2x2x1",
            "ewn:2x2x2",
            "ewn:3x3x4",
            "ewn:5x5x6",
            "ewn:15x15x3",
            "ewn:3x5x7",
        ] {
            assert_eq!(game(ok).variant(), ok);
        }
        for (bad, says) in [
            ("ewn:2x2x9", "1..=2"),
            ("ewn:2x2x3", "1..=2"),
            ("ewn:3x3x5", "1..=4"),
            ("ewn:5x5x7", "1..=6"),
            ("ewn:4x4x7", "1..=6"),
            ("ewn:3x4x7", "1..=6"),
            ("ewn:1x5x1", "2..=15"),
            ("ewn:16x2x1", "2..=15"),
            ("ewn:3x3x0", "1..=4"),
            ("ewn:3x3", "WxHxk"),
            ("ewn:3x3x3,x=1", "unknown option"),
        ] {
            let e = bad.parse::<AnyGame>().unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
        // 4x4x7: the start squares fit, the key does not (16 squares need 5 bits).
        let e = Ewn::new(4, 4, 7).unwrap_err();
        assert!(e.contains("64"), "{e}");
        // 2x3x3 fits exactly (red a1 b1 a2, blue b3 a3 b2); 2x3x4 would overlap.
        assert!(Ewn::new(2, 3, 3).is_ok());
        assert!(Ewn::new(2, 3, 4).unwrap_err().contains("meet"));
    }

    #[test]
    fn placement_and_die_chance() {
        let g = game("ewn:3x3x3");
        let s0 = g.initial_state();
        assert_eq!(g.turn(&s0), Turn::Chance);
        assert_eq!(g.notation(&s0), ".../.../... red place");
        let mut o = Vec::new();
        g.chance_outcomes(&s0, &mut o);
        assert_eq!(o.len(), 6);
        assert!(o.iter().all(|x| (x.prob - 1.0 / 6.0).abs() < 1e-15));
        // Lexicographic ranks: 0 = 123, 1 = 132, 2 = 213, 3 = 231, 4 = 312, 5 = 321.
        let s1 = g.apply_chance(&s0, 3);
        assert_eq!(g.notation(&s1), "R2R3./R1../... blue place");
        assert_eq!(g.outcome_name(&s0, 3), "red places R2=a1 R3=b1 R1=a2");
        let s2 = g.apply_chance(&s1, 4);
        assert_eq!(g.notation(&s2), "R2R3./R1.B2/.B1B3 red roll");
        assert_eq!(g.turn(&s2), Turn::Chance);
        g.chance_outcomes(&s2, &mut o);
        assert_eq!(o.iter().map(|x| x.outcome).collect::<Vec<_>>(), [0, 1, 2]);
        assert!(o.iter().all(|x| (x.prob - 1.0 / 3.0).abs() < 1e-15));
        assert_eq!(g.outcome_name(&s2, 1), "die 2");
        let s3 = g.apply_chance(&s2, 1);
        assert_eq!(g.turn(&s3), Turn::Player(Player::P0));
        assert_eq!(g.die(&s3), Some(2));
        assert_eq!(g.notation(&s3), "R2R3./R1.B2/.B1B3 red 2");
        // Red piece 2 on a1: diagonal b2, horizontal b1 (own piece R3: captured), vertical a2
        // (own piece R1).
        assert_eq!(legal(&g, &s3), [0, 1, 2]);
        assert_eq!(names(&g, &s3), ["R2 a1-b2", "R2 a1-b1 xR3", "R2 a1-a2 xR1"]);
        // 4 pieces: 24 placements, every permutation once.
        let g4 = game("ewn:3x3x4");
        let mut seen = HashSet::new();
        for o in 0..24 {
            seen.insert(g4.notation(&g4.apply_chance(&g4.initial_state(), o)));
        }
        assert_eq!(seen.len(), 24);
        assert_eq!(
            g4.notation(&g4.apply_chance(&g4.initial_state(), 23)),
            "R4R3R1/R2../... blue place"
        );
    }

    #[test]
    fn substitution_up_down_and_both() {
        let g = game("ewn:3x4x3");
        // Red has only piece 2; die 1: higher substitute only (h = 1).
        let s = pos(&g, "R2../.../.B1./... red 1");
        assert_eq!(legal(&g, &s), [3, 4, 5]);
        assert_eq!(names(&g, &s), ["R2 a1-b2", "R2 a1-b1", "R2 a1-a2"]);
        // Die 3: lower substitute (h = 0).
        let s = pos(&g, "R2../.../.B1./... red 3");
        assert_eq!(legal(&g, &s), [0, 1, 2]);
        // Red has 1 and 3, die 2: both (1 on c1 at the right edge: vertical only).
        let s = pos(&g, "..R1/R3../.B1./... red 2");
        assert_eq!(legal(&g, &s), [2, 3, 4, 5]);
        assert_eq!(
            names(&g, &s),
            ["R1 c1-c2", "R3 a2-b3 xB1", "R3 a2-b2", "R3 a2-a3"]
        );
        // Piece 2 present: only it moves, even when others exist.
        let s = pos(&g, "R1R2R3/.../.../.B1. red 2");
        assert_eq!(names(&g, &s), ["R2 b1-c2", "R2 b1-c1 xR3", "R2 b1-b2"]);
        // Blue, die 1 gone, 3 present and 2 gone: 3 is the higher substitute.
        let s = pos(&g, "R1../.../.../.B3. blue 1");
        assert_eq!(legal(&g, &s), [3, 4, 5]);
        assert_eq!(names(&g, &s), ["B3 b4-a3", "B3 b4-a4", "B3 b4-b3"]);
        // Blue die 3 with only 1 left: lower substitute.
        let s = pos(&g, "R1../.../.../.B1. blue 3");
        assert_eq!(legal(&g, &s), [0, 1, 2]);
    }

    #[test]
    fn edge_moves_stay_on_the_board() {
        let g = game("ewn:3x3x3");
        // Red on the bottom row: horizontal only.
        let s = pos(&g, ".B1./.../R1.. red 1");
        assert_eq!(names(&g, &s), ["R1 a3-b3"]);
        assert_eq!(legal(&g, &s), [1]);
        // Red on the right column: vertical only.
        let s = pos(&g, ".B1R1/.../... red 1");
        assert_eq!(legal(&g, &s), [2]);
        // Blue on the top row: horizontal only; on the left column: vertical only.
        let s = pos(&g, ".B1./.../.R1. blue 1");
        assert_eq!(names(&g, &s), ["B1 b1-a1"]);
        let s = pos(&g, ".../B1../.R1. blue 1");
        assert_eq!(names(&g, &s), ["B1 a2-a1"]);
        // Blue in the far corner: all three.
        let s = pos(&g, "R1../.../..B1 blue 1");
        assert_eq!(names(&g, &s), ["B1 c3-b2", "B1 c3-b3", "B1 c3-c2"]);
    }

    #[test]
    fn captures_and_wins() {
        let g = game("ewn:3x3x3");
        // Red captures its own piece: red 2 on a1 takes red 1 on b1.
        let s = pos(&g, "R2R1./..B2/..B1 red 2");
        let t = g.apply(&s, 1);
        assert_eq!(g.notation(&t), ".R2./..B2/..B1 blue roll");
        // Red captures an enemy piece that is not the last: game goes on.
        let s = pos(&g, "R1../.B1./..B2 red 1");
        let t = g.apply(&s, 0);
        assert_eq!(g.notation(&t), ".../.R1./..B2 blue roll");
        // Capturing the last enemy piece wins.
        let s = pos(&g, "R1../.B1./... red 1");
        let t = g.apply(&s, 0);
        assert_eq!(g.turn(&t), Turn::Terminal(GameResult::Win(Player::P0)));
        assert_eq!(g.notation(&t), ".../.R1./... red wins");
        // Reaching the target corner wins, empty or by capture.
        let s = pos(&g, ".../.R1./B1.. red 1");
        let t = g.apply(&s, 0);
        assert_eq!(g.turn(&t), Turn::Terminal(GameResult::Win(Player::P0)));
        assert_eq!(g.notation(&t), ".../.../B1.R1 red wins");
        let s = pos(&g, ".B2./.R1./B1.B3 red 1");
        assert_eq!(
            g.turn(&g.apply(&s, 0)),
            Turn::Terminal(GameResult::Win(Player::P0))
        );
        // Blue reaching a1 wins even with red pieces left; blue's own capture of its piece.
        let s = pos(&g, "R1../.B1./.R2. blue 1");
        let t = g.apply(&s, 0);
        assert_eq!(g.turn(&t), Turn::Terminal(GameResult::Win(Player::P1)));
        assert_eq!(g.notation(&t), "B1../.../.R2. blue wins");
        let s = pos(&g, "R1../.B1B2/.R2. blue 2");
        let t = g.apply(&s, 1);
        assert_eq!(g.notation(&t), "R1../.B2./.R2. red roll");
        // Blue captures red's last piece.
        let s = pos(&g, ".R1./.B1./... blue 1");
        let t = g.apply(&s, 2);
        assert_eq!(g.notation(&t), ".B1./.../... blue wins");
        assert_eq!(g.turn(&t), Turn::Terminal(GameResult::Win(Player::P1)));
        let mut v = vec![9];
        g.legal_actions(&t, &mut v);
        assert!(v.is_empty());
    }

    #[test]
    fn keys_and_notation_reject_bad_input() {
        let g = game("ewn:3x3x3");
        // 3x3x3: 6 fields of 4 bits, side, 2 die bits = 27 bits.
        assert!(g.state_from_key(1 << 27).is_err());
        assert!(g.state_from_key(10).is_err()); // red 1 on square 9 of 9
        assert!(g.state_from_key(1 | 1 << 4).is_err()); // two pieces on a1
        let s = pos(&g, "R1../.B1./... red 2");
        let k = g.key(&s);
        assert_eq!(k, 1 | 5 << 12 | 2 << 25);
        assert_eq!(g.state_from_key(k).unwrap(), s);
        assert!(g.state_from_key(1 | 5 << 12 | 3 << 25).is_ok());
        // Terminal with the winner as side: not a state.
        let over = pos(&g, ".../.R1./... red wins");
        let ko = g.key(&over);
        assert!(g.state_from_key(ko).is_ok());
        assert!(g.state_from_key(ko ^ 1 << 24).is_err());
        // Blue's placement and red's win by capture differ only in the side bit.
        let placed = g.apply_chance(&g.initial_state(), 0);
        let kp = g.key(&placed);
        assert_eq!(kp >> 24 & 1, 0);
        assert_eq!(g.state_from_key(kp).unwrap(), placed);
        assert_eq!(g.initial_state(), g.state_from_key(0).unwrap());
        for bad in [
            "",
            "R1../.B1./... red",
            "R1../.B1. red 2",
            "R1../.B1./.... red 2",
            "R1../.B1./.. red 2",
            "R4../.B1./... red 2",
            "R1../.B1./R1.. red 2",
            "R1../.X1./... red 2",
            "R1../.B1./... green 2",
            "R1../.B1./... red 4",
            "R1../.B1./... red wins",
            "R1../.B1./... red place",
            ".../.B1./..R1 red roll",
            "R1R2./R3../... red place",
            "R1R2./R3../... blue roll",
        ] {
            let e = g.parse_notation(bad).unwrap_err().to_string();
            assert!(e.len() > 30, "{bad}: {e}");
        }
    }

    /// Every decision position (board, side, die) reachable from any placement, terminal
    /// positions not counted, deduplicated by key.
    fn count_decision_positions(g: &Ewn) -> usize {
        let mut seen: HashSet<u64, BuildHasherDefault<KeyHasher>> = HashSet::default();
        let mut stack: Vec<EwnState> = Vec::new();
        for s in g.test_positions() {
            if seen.insert(g.key(&s)) {
                stack.push(s);
            }
        }
        let mut actions = Vec::new();
        let k = g.pieces() as Outcome;
        while let Some(s) = stack.pop() {
            g.legal_actions(&s, &mut actions);
            for &a in &actions {
                let t = g.apply(&s, a);
                if let Turn::Terminal(_) = g.turn(&t) {
                    continue;
                }
                for d in 0..k {
                    let u = g.apply_chance(&t, d);
                    if seen.insert(g.key(&u)) {
                        stack.push(u);
                    }
                }
            }
        }
        seen.len()
    }

    #[test]
    fn position_count_3x3x3() {
        let g = game("ewn:3x3x3");
        assert_eq!(g.test_positions().len(), 108);
        // Must reproduce (docs/games.md).
        assert_eq!(count_decision_positions(&g), 367_956);
    }

    #[test]
    fn position_count_3x4x3() {
        let g = game("ewn:3x4x3");
        assert_eq!(g.test_positions().len(), 108);
        // Our own figure (regression value, not from the literature): 1,089,540 (board, side)
        // pairs x 3 die values.
        assert_eq!(count_decision_positions(&g), 3_268_620);
    }

    #[test]
    fn position_count_3x3x4() {
        let g = game("ewn:3x3x4");
        assert_eq!(g.test_positions().len(), 2304);
        // About 2.6 s in a test build on this machine.
        // Our own figure (regression value, not from the literature): 1,579,008 (board, side)
        // pairs x 4 die values.
        assert_eq!(count_decision_positions(&g), 6_316_032);
    }

    #[test]
    fn every_state_round_trips_on_a_small_board() {
        // Exhaustive over 2x2x2: every reachable state's key and notation round-trip.
        let g = game("ewn:2x2x2");
        let mut seen = HashSet::new();
        let mut stack = vec![g.initial_state()];
        let mut outcomes = Vec::new();
        let mut actions = Vec::new();
        while let Some(s) = stack.pop() {
            if !seen.insert(g.key(&s)) {
                continue;
            }
            assert_eq!(g.state_from_key(g.key(&s)).unwrap(), s);
            assert_eq!(g.parse_notation(&g.notation(&s)).unwrap(), s);
            g.chance_outcomes(&s, &mut outcomes);
            for o in &outcomes {
                stack.push(g.apply_chance(&s, o.outcome));
            }
            g.legal_actions(&s, &mut actions);
            for &a in &actions {
                stack.push(g.apply(&s, a));
            }
        }
        assert!(seen.len() > 20, "{}", seen.len());
    }
}
