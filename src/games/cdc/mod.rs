//! Chinese dark chess (CDC): the 2x4 mini game of the literature (any material combination)
//! and the standard 4x8 game, played by ONE engine generic over the board size.
//!
//! # Rules (docs/games.md)
//! Pieces, ranked high to low: King, Guard, Minister, Rook, kNight, Cannon, Pawn (`K G M R N
//! C P` red, `k g m r n c p` black). Every piece starts face down, shuffled; a flip reveals a
//! piece drawn uniformly from the face-down multiset (the shuffle is never a chance event of
//! its own). `Player::P0` moves first; its first action is necessarily a flip, and the flipper
//! takes the colour of the revealed piece (the other seat the other colour). Colours live in
//! the state.
//!
//! - A non-cannon moves one square orthogonally to an empty square, or captures an adjacent
//!   face-up enemy piece of equal or lower rank, except that a King cannot capture a Pawn and
//!   a Pawn can capture a King.
//! - A Cannon moves one square to an empty square like the others, never captures an adjacent
//!   piece, and captures by jumping along a line (file or rank) over exactly one piece (face
//!   up or down, either colour) onto a face-up enemy piece of any rank at any distance. On
//!   the 2x4 board the 2-square ranks leave no room for a screen, so jumps go along files.
//! - Face-down pieces are never captured or moved.
//! - The side to move loses if it has no pieces left (on the board or face down) or no legal
//!   action (nothing to flip and no legal move).
//! - Draw after `no_progress` consecutive plies with no capture and no flip (default 40), and
//!   when the same position (key, which holds the colour to move) occurs for the
//!   `repetition`-th time (default 3; `off` disables it).
//!
//! Checks run in this order after every move and every flip outcome (as OpenSpiel's `banqi`
//! does for the first and the last): no-progress draw, repetition draw, loss of the side to
//! move. A flip action itself only opens the chance state; the flip's outcome is the progress
//! event that resets the no-progress counter (OpenSpiel resets it at the same moment).
//!
//! # Variants and options
//! `cdc:XXXX` is "XXXX vs xxxx": four letters of `KGMRNCP` in any order (at most K1, G2, M2,
//! R2, N2, C2, P5), printed in rank order (`cdc:pcpp` is `cdc:CPPP`). `cdc:4x8` is the
//! standard game (1 K, 2 G, 2 M, 2 R, 2 N, 2 C, 5 P a side). Options: `no_progress=N` (default
//! 40; 1..=64 while repetition is on, 1..=1000 with `repetition=off`) and `repetition=N|off`
//! (N in 2..=9, default 3). [`Game::variant`] prints only non-default options, e.g.
//! `cdc:4x8,no_progress=50,repetition=off`, which is OpenSpiel's `banqi` rule set.
//!
//! # Squares
//! The board has F files (`a`, `b`, ...) of R ranks (`1..R`): 2x4 is F = 2, R = 4 and 4x8 is
//! F = 4, R = 8. Square index = file * R + (rank - 1): on 2x4 a1..a4 = 0..3, b1..b4 = 4..7
//! (as the spec), on 4x8 a1..a8 = 0..7, b1..b8 = 8..15, c = 16..23, d = 24..31. This is
//! exactly OpenSpiel `banqi`'s row-major square `row * 8 + col` with row = file and
//! col = rank - 1, so OpenSpiel's `Flip(r,c)` is our flip of square `r*8 + c` and its action
//! numbers equal ours, unchanged.
//!
//! # Actions
//! - 2x4 (|A| = 40): 0..7 flip square 0..7; 8 + 4*src + j moves from src to the j-th of its
//!   four destinations sorted by index (the other three squares of its file and the square of
//!   the same rank in the other file): a1 -> a2 a3 a4 b1, b4 -> a4 b1 b2 b3.
//! - 4x8 (|A| = 1056): 0..31 flip, then 32 + 32*src + dst (OpenSpiel's encoding).
//!
//! Chance outcomes (the revealed piece) are coloured kinds, `colour * 7 + kind` with red = 0,
//! black = 1 and kind K=0 G=1 M=2 R=3 N=4 C=5 P=6: `K`=0 .. `P`=6, `k`=7 .. `p`=13 (the
//! numbering of OpenSpiel's `banqi`, whose G A E R H C S are our K G M R N C P).
//!
//! # Key
//! Square codes: 0 empty, 1 face down, 2 + coloured kind (2..15), 4 bits per square; square i
//! at bits 4i. `aux` = colour to move (0 none yet, 1 red, 2 black; for a chance state the
//! flipper's colour) | pending flip square + 1 (0 = decision state) << 2 | face-down
//! multiset << 8, the multiset as a mixed-radix number over the coloured kinds the material
//! has (digit of kind k = its face-down count, base = its material count + 1, in outcome
//! order). 2x4: `u64` = board (32 bits) | aux << 32 (under 48 bits in all). 4x8:
//! `(board: u128, aux: u64)`. Terminal states have keys too (the position decides the loss;
//! draws come from counters, which are not in the key).
//!
//! The key does not say which seat plays which colour: the spec's key holds the colour to
//! move only (a position's value does not depend on the seat, and the must-reproduce counts
//! dedup by that key), and the seat is not a function of it: of the 197,429 PPPP keys reachable
//! (terminal ones included), 185,616 are reachable both with P0 and with P1 to move, since
//! flips and captures let the number of plies to a position differ in parity. So
//! [`Game::state_from_key`] picks the seats by a convention: once colours are assigned the side
//! to move (or the flipper) sits in `P1` (the seat that moves after P0's first flip, so rebuilt
//! S_test positions equal the played ones). The colour to move, the legal actions and the
//! value are always those of the position; only the seat label may differ from a game's.
//!
//! # Notation
//! `<board> <to move> <face down> [flip=<square>]`: the board file by file (a1..aR, then
//! b1..bR, ...), files separated by `/`, `.` empty, `x` face down, a piece letter otherwise;
//! the colour to move `r`, `b` or `-` (none yet); the face-down multiset as letters in outcome
//! order (`-` if none); and for a chance state the square whose flip is pending. The 2x4 start
//! is `xxxx/xxxx - PPPPpppp`; `xx.P/p.xK r PPp` has red to move.
//!
//! # Draw-rule history
//! Only plain moves can repeat a position (a flip or a capture is irreversible), so the state
//! keeps the plain moves since the last flip or capture, each packed as destination and
//! direction (5 bits on 2x4, 7 on 4x8), and finds repeats by undoing them on a scratch board,
//! comparing every second ply. That caps `no_progress` at 64 while repetition is on. The 2x4
//! state is 70 bytes, the 4x8 state 110.
//!
//! # Differences from OpenSpiel's `banqi`
//! Read from its source (2.0.2) and checked by replaying 20,000 of its random games under
//! `cdc:4x8,no_progress=50,repetition=off` (every legal set and every result agreed; 12 of
//! them are in `tests/data/cdc_banqi_random.txt`). Same: ranks, K/P exception (its "soldier
//! cannot capture cannon" is our rank order), cannon jumps in four directions over exactly
//! one piece, squares, action and outcome numbering, no-progress counting (plain moves count,
//! a flip outcome or a capture resets, the draw is checked before the loss). Differences:
//! - A side whose pieces are all captured while face-down pieces (then all the opponent's)
//!   remain loses here (the spec's rule, which the 194,933 count needs: OpenSpiel's rule
//!   gives 198,813), whereas `banqi` lets it flip on. It never arose in 2,000 random games.
//! - `banqi` has no repetition rule (use `repetition=off`); its default draw is 50 plies.
//! - Its draw scores 0/0 and a win +1/-1; ours 0.5/0.5 and 1/0.
//!
//! # Files
//! This file holds the types and the `Game` impls; the methods of `Rules` are in `rules.rs`
//! (geometry, moves, draw rules, transitions) and `notation.rs` (key, notation, drawing,
//! action names). Beside them: `index.rs` the perfect index ([`CdcIndex`]), `keys.rs` the
//! solver's view (`Solvable`, the key expander, the `KeySpace` of the solve on keys) and
//! `encode.rs` the network's input planes.

mod abilities;
mod encode;
mod index;
mod keys;
mod notation;
mod rules;

use std::fmt::Write as _;

use crate::error::GameError;
use crate::game::{Action, ChanceOutcome, Game, GameResult, Outcome, Player, Turn};
use crate::games::{FamilyInfo, VariantSpec};

pub use index::CdcIndex;

pub(crate) const FAMILY: FamilyInfo = FamilyInfo {
    name: "cdc",
    title: "Chinese dark chess (2x4 mini game and standard 4x8)",
    syntax: "cdc:XXXX | cdc:4x8",
    parameters: &[
        (
            "XXXX",
            "the material of each side: four letters of K G M R N C P (high to low), any order, \
             at most K1 G2 M2 R2 N2 C2 P5; `cdc:PPPP` is PPPP vs pppp on the 2x4 board",
        ),
        (
            "4x8",
            "the standard 4x8 game (K, 2 G, 2 M, 2 R, 2 N, 2 C, 5 P a side)",
        ),
        (
            "no_progress=N",
            "draw after N plies without capture or flip; default 40; 1..=64 (1..=1000 with \
             repetition=off)",
        ),
        (
            "repetition=N|off",
            "draw when a position occurs the N-th time (N in 2..=9); default 3",
        ),
    ],
    action_space: "40 on 2x4 (flips 0..7, moves 8 + 4*src + j); 1056 on 4x8 (flips 0..31, \
                   moves 32 + 32*src + dst)",
    examples: &[
        "cdc:PPPP",
        "cdc:KPPP",
        "cdc:GGCC,no_progress=30",
        "cdc:4x8",
        "cdc:4x8,no_progress=50,repetition=off",
    ],
};

/// Number of piece kinds (K G M R N C P).
const KINDS: usize = 7;
/// Number of coloured kinds (outcome indices 0..14).
const CKINDS: usize = 14;
const KIND_CHARS: [u8; KINDS] = *b"KGMRNCP";
const KING: u8 = 0;
const CANNON: u8 = 5;
const PAWN: u8 = 6;
/// Pieces of each kind in the standard set, per colour.
const STANDARD: [u8; KINDS] = [1, 2, 2, 2, 2, 2, 5];

/// Square codes: empty, face down, then `PIECE0 + coloured kind`.
const EMPTY: u8 = 0;
const DOWN: u8 = 1;
const PIECE0: u8 = 2;

/// Plain moves remembered for the repetition rule (caps `no_progress` while it is on).
const MAX_HISTORY: usize = 64;
const MAX_NO_PROGRESS: u32 = 1000;
const DEFAULT_NO_PROGRESS: u32 = 40;
const DEFAULT_REPETITION: u8 = 3;

/// A side's colour.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Colour {
    Red,
    Black,
}

impl Colour {
    pub fn other(self) -> Colour {
        match self {
            Colour::Red => Colour::Black,
            Colour::Black => Colour::Red,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The colour of coloured kind `ck` (0..14).
#[inline]
fn ck_colour(ck: u8) -> Colour {
    if ck < KINDS as u8 {
        Colour::Red
    } else {
        Colour::Black
    }
}

#[inline]
fn ck_kind(ck: u8) -> u8 {
    // ck < 14: a compare and a subtraction instead of a remainder (the move generator's
    // innermost step).
    if ck >= KINDS as u8 {
        ck - KINDS as u8
    } else {
        ck
    }
}

fn ck_char(ck: u8) -> char {
    let c = KIND_CHARS[ck_kind(ck) as usize] as char;
    match ck_colour(ck) {
        Colour::Red => c,
        Colour::Black => c.to_ascii_lowercase(),
    }
}

fn char_ck(c: char) -> Option<u8> {
    let up = c.to_ascii_uppercase() as u8;
    let kind = KIND_CHARS.iter().position(|&k| k == up)? as u8;
    Some(if c.is_ascii_uppercase() {
        kind
    } else {
        kind + KINDS as u8
    })
}

/// Whether a non-cannon of kind `att` may capture a face-up enemy of kind `def`.
#[inline]
fn can_capture(att: u8, def: u8) -> bool {
    match (att, def) {
        (KING, PAWN) => false,
        (PAWN, KING) => true,
        _ => att <= def,
    }
}

/// No neighbour in [`STEP_2X4`].
const NO_SQUARE: u8 = u8::MAX;

/// 2x4: `STEP_2X4[sq][dir]` = [`Rules::step`] on the 2x4 board (4 ranks, 2 files).
const STEP_2X4: [[u8; 4]; 8] = {
    let mut t = [[NO_SQUARE; 4]; 8];
    let mut sq = 0;
    while sq < 8 {
        if sq >= 4 {
            t[sq][0] = (sq - 4) as u8;
        }
        if sq % 4 != 0 {
            t[sq][1] = (sq - 1) as u8;
        }
        if sq % 4 != 3 {
            t[sq][2] = (sq + 1) as u8;
        }
        if sq + 4 < 8 {
            t[sq][3] = (sq + 4) as u8;
        }
        sq += 1;
    }
    t
};

/// 2x4: `J_2X4[src][dst]` = the index j of `dst` among `src`'s four sorted destinations.
const J_2X4: [[u8; 8]; 8] = {
    let mut t = [[0u8; 8]; 8];
    let mut src = 0;
    while src < 8 {
        let mut j = 0;
        let mut dst = 0;
        while dst < 8 {
            if dst != src && (dst / 4 == src / 4 || dst % 4 == src % 4) {
                t[src][dst] = j;
                j += 1;
            }
            dst += 1;
        }
        src += 1;
    }
    t
};

/// A CDC state on a board of `N` squares, with `HB` bytes of packed plain-move history.
/// Use the aliases [`CdcState2x4`] and [`CdcState4x8`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CdcState<const N: usize, const HB: usize> {
    /// Square codes (0 empty, 1 face down, 2 + coloured kind).
    board: [u8; N],
    /// Face-down count of each coloured kind.
    hidden: [u8; CKINDS],
    /// Plain moves since the last flip or capture, packed (only with the repetition rule).
    history: [u8; HB],
    /// Plies since the last flip or capture (the no-progress counter).
    quiet: u16,
    /// The seat to move; for a chance state, the seat that flipped.
    seat: Player,
    /// P0's colour, once the first flip has assigned it.
    p0: Option<Colour>,
    /// The square whose flip awaits its chance outcome.
    pending: Option<u8>,
    /// Set once the game is over.
    result: Option<GameResult>,
}

/// A 2x4 state (70 bytes).
pub(crate) type CdcState2x4 = CdcState<8, 41>;
/// A 4x8 state.
pub type CdcState4x8 = CdcState<32, 57>;

impl<const N: usize, const HB: usize> CdcState<N, HB> {
    /// The colour of the side to move (of the flipper in a chance state); `None` before the
    /// first flip is resolved.
    pub fn colour_to_move(&self) -> Option<Colour> {
        self.p0.map(|c| match self.seat {
            Player::P0 => c,
            Player::P1 => c.other(),
        })
    }

    /// The colour seat `p` plays, once assigned.
    pub fn colour_of(&self, p: Player) -> Option<Colour> {
        self.p0.map(|c| if p == Player::P0 { c } else { c.other() })
    }

    /// Plies since the last flip or capture.
    pub fn no_progress_plies(&self) -> u32 {
        self.quiet as u32
    }

    /// The piece on square `sq`: `None` for empty or face down, else the coloured kind.
    pub fn piece(&self, sq: usize) -> Option<u8> {
        self.board.get(sq).and_then(|&c| c.checked_sub(PIECE0))
    }

    /// Whether square `sq` holds a face-down piece.
    pub fn is_face_down(&self, sq: usize) -> bool {
        self.board.get(sq) == Some(&DOWN)
    }

    /// Face-down counts per coloured kind (outcome order).
    pub fn face_down_counts(&self) -> [u8; CKINDS] {
        self.hidden
    }
}

/// Which board.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Layout {
    TwoByFour,
    FourByEight,
}

/// The rules shared by both boards: geometry, material, draw rules.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Rules {
    layout: Layout,
    files: usize,
    ranks: usize,
    /// Pieces per kind per colour.
    material: [u8; KINDS],
    no_progress: u16,
    repetition: Option<u8>,
    /// Place value of each coloured kind in the face-down mixed radix (0: not in material).
    place: [u32; CKINDS],
    /// Number of distinct multisets (the radix's range).
    radix_total: u32,
    /// Bits of one history entry (square bits + 2 for the direction).
    hist_bits: usize,
}

/// What the draw checks after a state change should include.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Change {
    PlainMove,
    Progress,
    Rebuilt,
}

/// The seat [`Game::state_from_key`] gives the side to move (or the flipper of a chance
/// state) once colours are assigned: always `P1`, the seat that moves right after P0's first
/// flip, so the rebuilt test positions are exactly the played ones. The key holds colours
/// only, and most positions are reachable with either seat to move (see the module docs).
const REBUILT_SEAT: Player = Player::P1;

/// 2x4 Chinese dark chess with one of the material combinations ("XXXX vs xxxx").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cdc {
    rules: Rules,
}

/// Standard 4x8 Chinese dark chess.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cdc4x8 {
    rules: Rules,
}

impl Cdc {
    pub(crate) fn from_spec(spec: &VariantSpec) -> Result<Cdc, GameError> {
        let mut spec = spec.clone();
        let params = spec.params.trim().to_string();
        let letters: Vec<char> = params.chars().collect();
        let allowed = "four piece letters from K G M R N C P (e.g. PPPP, KPPP, GGCC), at most \
                       K1 G2 M2 R2 N2 C2 P5, or 4x8 for the standard game";
        if letters.len() != 4 {
            return Err(spec.error(format!("material `{params}`; allowed: {allowed}")));
        }
        let mut material = [0u8; KINDS];
        for ch in letters {
            let up = ch.to_ascii_uppercase() as u8;
            let Some(k) = KIND_CHARS.iter().position(|&c| c == up) else {
                return Err(spec.error(format!(
                    "`{ch}` is not a piece letter in material `{params}`; allowed: {allowed}"
                )));
            };
            material[k] += 1;
            if material[k] > STANDARD[k] {
                return Err(spec.error(format!(
                    "material `{params}` has more than {} `{}`; allowed: {allowed}",
                    STANDARD[k], KIND_CHARS[k] as char
                )));
            }
        }
        let (np, rep) = Rules::parse_options(&mut spec)?;
        Ok(Cdc {
            rules: Rules::new(Layout::TwoByFour, material, np, rep),
        })
    }

    /// The game "`material` vs lowercase" with default draw rules (e.g. `"KPPP"`).
    pub fn new(material: &str) -> Result<Cdc, GameError> {
        Cdc::from_spec(&VariantSpec::parse(&format!("cdc:{material}"))?)
    }

    /// The material of each side in rank order, e.g. `KPPP`.
    pub fn material(&self) -> String {
        let mut s = String::new();
        for (k, &m) in self.rules.material.iter().enumerate() {
            for _ in 0..m {
                s.push(KIND_CHARS[k] as char);
            }
        }
        s
    }

    /// The layer of a position: 2 * face-down pieces + revealed pieces on the board. A flip or
    /// a capture lowers it by 1; a plain move keeps it.
    pub fn level(&self, s: &CdcState2x4) -> u32 {
        Rules::level(s)
    }

    /// S_test: the start position and every decision position after the first flip (each
    /// square, each coloured kind that can be revealed), start first, then by square and kind.
    pub fn test_positions(&self) -> Vec<CdcState2x4> {
        self.rules.test_positions()
    }
}

impl Cdc4x8 {
    pub(crate) fn from_spec(spec: &VariantSpec) -> Result<Cdc4x8, GameError> {
        let mut spec = spec.clone();
        if !spec.params.trim().eq_ignore_ascii_case("4x8") {
            return Err(spec.error(format!(
                "board `{}`; allowed: 4x8 (or four piece letters for the 2x4 game)",
                spec.params
            )));
        }
        let (np, rep) = Rules::parse_options(&mut spec)?;
        Ok(Cdc4x8 {
            rules: Rules::new(Layout::FourByEight, STANDARD, np, rep),
        })
    }

    /// See [`Cdc::level`].
    pub fn level(&self, s: &CdcState4x8) -> u32 {
        Rules::level(s)
    }

    /// See [`Cdc::test_positions`] (1 + 32 * 14 positions).
    pub fn test_positions(&self) -> Vec<CdcState4x8> {
        self.rules.test_positions()
    }
}

/// The `Game` methods both boards share, delegating to [`Rules`].
macro_rules! impl_game_common {
    ($N:literal, $HB:literal) => {
        fn num_actions(&self) -> usize {
            self.rules.num_actions()
        }
        fn initial_state(&self) -> CdcState<$N, $HB> {
            self.rules.initial_state()
        }
        #[inline]
        fn turn(&self, s: &CdcState<$N, $HB>) -> Turn {
            match (s.result, s.pending) {
                (Some(r), _) => Turn::Terminal(r),
                (None, Some(_)) => Turn::Chance,
                (None, None) => Turn::Player(s.seat),
            }
        }
        fn legal_actions(&self, s: &CdcState<$N, $HB>, out: &mut Vec<Action>) {
            self.rules.legal_actions(s, out)
        }
        fn apply(&self, s: &CdcState<$N, $HB>, a: Action) -> CdcState<$N, $HB> {
            self.rules.apply(s, a)
        }
        fn chance_outcomes(&self, s: &CdcState<$N, $HB>, out: &mut Vec<ChanceOutcome>) {
            self.rules.chance_outcomes(s, out)
        }
        fn apply_chance(&self, s: &CdcState<$N, $HB>, o: Outcome) -> CdcState<$N, $HB> {
            self.rules.apply_chance(s, o)
        }
        fn action_name(&self, s: &CdcState<$N, $HB>, a: Action) -> String {
            self.rules.action_name(s, a)
        }
        fn outcome_name(&self, _: &CdcState<$N, $HB>, o: Outcome) -> String {
            if (o as usize) < CKINDS {
                format!("reveals {}", ck_char(o as u8))
            } else {
                format!("outcome {o} (out of range)")
            }
        }
        fn render(&self, s: &CdcState<$N, $HB>) -> String {
            self.rules.render(s)
        }
        fn notation(&self, s: &CdcState<$N, $HB>) -> String {
            self.rules.notation(s)
        }
        fn parse_notation(&self, text: &str) -> Result<CdcState<$N, $HB>, GameError> {
            self.rules
                .parse_notation(text)
                .map_err(|r| GameError::bad_position(self.variant(), text, r))
        }
    };
}

impl Game for Cdc {
    type State = CdcState2x4;
    type Key = u64;

    fn variant(&self) -> String {
        format!("cdc:{}{}", self.material(), self.rules.options_suffix())
    }

    impl_game_common!(8, 41);

    fn key(&self, s: &CdcState2x4) -> u64 {
        let (board, aux) = self.rules.key_parts(s);
        board as u64 | aux << 32
    }

    fn state_from_key(&self, k: u64) -> Result<CdcState2x4, GameError> {
        self.rules
            .decode_key_parts((k & 0xFFFF_FFFF) as u128, k >> 32)
            .map_err(|r| GameError::bad_key(self.variant(), k, r))
    }
}

impl Game for Cdc4x8 {
    type State = CdcState4x8;
    type Key = (u128, u64);

    fn variant(&self) -> String {
        format!("cdc:4x8{}", self.rules.options_suffix())
    }

    impl_game_common!(32, 57);

    fn key(&self, s: &CdcState4x8) -> (u128, u64) {
        self.rules.key_parts(s)
    }

    fn state_from_key(&self, k: (u128, u64)) -> Result<CdcState4x8, GameError> {
        self.rules
            .decode_key_parts(k.0, k.1)
            .map_err(|r| GameError::bad_key(self.variant(), k, r))
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod variant_tests;
