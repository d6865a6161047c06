//! Input features of a network: an optional ability beside [`Game`] (docs/network.md).
//!
//! [`Encode`] writes a decision state as `channels x height x width` planes of `f32`, seen
//! from the side to move (its pieces first), so one network serves both seats. A multilayer
//! perceptron reads the planes flattened; a convolutional net reads them as images.
//!
//! The learner is generic over every [`Game`] (docs/learners.md), so it cannot name
//! `G: Encode` in its bounds; [`encoder`] finds the encoding of a game at run time (a
//! downcast over the games that have one, the same way the run driver finds a game's exact
//! solution) and returns it type-erased as an [`Encoder<G>`].

use std::any::Any;
use std::sync::Arc;

use crate::game::{Game, Player, Turn};
use crate::games::cdc::CdcState;
use crate::games::{Cdc, Cdc4x8, Checkers, ConnectFour, Ewn};

/// The shape of a game's input planes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Planes {
    pub channels: usize,
    pub height: usize,
    pub width: usize,
}

impl Planes {
    /// Features in all: channels x height x width.
    pub fn len(&self) -> usize {
        self.channels * self.height * self.width
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A game whose decision states a network can read.
pub trait Encode: Game {
    /// The shape of every state's planes.
    fn planes(&self) -> Planes;

    /// Writes the planes of decision state `s` into `out` (length [`Planes::len`], channel
    /// major, then rows, then columns), overwriting every entry. A pure function of the
    /// state's position key and side to move.
    fn encode(&self, s: &Self::State, out: &mut [f32]);
}

/// An encoding with its game type erased to `G`'s state type.
pub trait DynEncode<G: Game>: Send + Sync {
    fn planes(&self) -> Planes;
    fn encode(&self, s: &G::State, out: &mut [f32]);
}

impl<G: Encode> DynEncode<G> for G {
    fn planes(&self) -> Planes {
        Encode::planes(self)
    }

    fn encode(&self, s: &G::State, out: &mut [f32]) {
        Encode::encode(self, s, out)
    }
}

/// A game's encoding, shared by every thread.
pub type Encoder<G> = Arc<dyn DynEncode<G>>;

/// `g`'s encoding when `G` is `E`.
fn try_as<G: Game, E: Encode>(g: &G) -> Option<Encoder<G>> {
    let e = (g as &dyn Any).downcast_ref::<E>()?;
    let erased: Encoder<E> = Arc::new(e.clone());
    let boxed: Box<dyn Any> = Box::new(erased);
    boxed.downcast::<Encoder<G>>().ok().map(|b| *b)
}

/// The encoding of `g`, if its game has one (every game of the registry does).
pub fn encoder<G: Game>(g: &G) -> Option<Encoder<G>> {
    try_as::<G, Ewn>(g)
        .or_else(|| try_as::<G, Cdc>(g))
        .or_else(|| try_as::<G, Cdc4x8>(g))
        .or_else(|| try_as::<G, ConnectFour>(g))
        .or_else(|| try_as::<G, Checkers>(g))
}

fn side_to_move<G: Game>(g: &G, s: &G::State) -> Player {
    match g.turn(s) {
        Turn::Player(p) => p,
        // Only decision states are encoded; anything else is read from P0's side.
        _ => Player::P0,
    }
}

/// EinStein würfelt nicht!: for the side to move, k planes (its piece n on its square), then k
/// for the opponent's pieces, k constant planes (the die shows d), and one constant plane
/// (1 when the second player, blue, is to move: the boards are not symmetric).
impl Encode for Ewn {
    fn planes(&self) -> Planes {
        Planes {
            channels: 3 * self.pieces() + 1,
            height: self.height(),
            width: self.width(),
        }
    }

    fn encode(&self, s: &Self::State, out: &mut [f32]) {
        let k = self.pieces();
        let area = self.width() * self.height();
        out.fill(0.0);
        let me = side_to_move(self, s);
        for (block, p) in [me, me.other()].into_iter().enumerate() {
            for n in 1..=k {
                if let Some(sq) = self.piece_square(s, p, n) {
                    out[(block * k + n - 1) * area + sq] = 1.0;
                }
            }
        }
        if let Some(d) = self.die(s)
            && (1..=k).contains(&(d as usize))
        {
            let c = 2 * k + d as usize - 1;
            out[c * area..(c + 1) * area].fill(1.0);
        }
        if me == Player::P1 {
            out[3 * k * area..(3 * k + 1) * area].fill(1.0);
        }
    }
}

/// Planes of Chinese dark chess on `rows` x `cols` (both boards): the side to move's seven
/// kinds face up, the opponent's seven, face-down squares, the face-down count of each of the
/// fourteen coloured kinds (own colour first, divided by 5, constant planes) and one constant
/// plane set once the colours are assigned (before the first flip, "own" is red).
fn encode_cdc<const N: usize, const HB: usize>(s: &CdcState<N, HB>, out: &mut [f32]) {
    const KINDS: usize = 7;
    out.fill(0.0);
    let own = s.colour_to_move();
    // Coloured kinds 0..7 are red, 7..14 black.
    let own_base = match own {
        Some(crate::games::cdc::Colour::Black) => KINDS,
        _ => 0,
    };
    let flip = |ck: usize| (ck + 2 * KINDS - own_base) % (2 * KINDS);
    for sq in 0..N {
        if let Some(ck) = s.piece(sq) {
            out[flip(ck as usize) * N + sq] = 1.0;
        } else if s.is_face_down(sq) {
            out[2 * KINDS * N + sq] = 1.0;
        }
    }
    for (ck, &n) in s.face_down_counts().iter().enumerate() {
        let c = 2 * KINDS + 1 + flip(ck);
        out[c * N..(c + 1) * N].fill(f32::from(n) / 5.0);
    }
    if own.is_some() {
        let c = 4 * KINDS + 1;
        out[c * N..(c + 1) * N].fill(1.0);
    }
}

/// Channels of [`encode_cdc`].
const CDC_CHANNELS: usize = 30;

impl Encode for Cdc {
    fn planes(&self) -> Planes {
        Planes {
            channels: CDC_CHANNELS,
            height: 2,
            width: 4,
        }
    }

    fn encode(&self, s: &Self::State, out: &mut [f32]) {
        encode_cdc(s, out)
    }
}

impl Encode for Cdc4x8 {
    fn planes(&self) -> Planes {
        Planes {
            channels: CDC_CHANNELS,
            height: 4,
            width: 8,
        }
    }

    fn encode(&self, s: &Self::State, out: &mut [f32]) {
        encode_cdc(s, out)
    }
}

/// Connect Four: the side to move's stones, then the opponent's (row 0 the bottom).
impl Encode for ConnectFour {
    fn planes(&self) -> Planes {
        Planes {
            channels: 2,
            height: self.height(),
            width: self.width(),
        }
    }

    fn encode(&self, s: &Self::State, out: &mut [f32]) {
        let (w, h) = (self.width(), self.height());
        out.fill(0.0);
        let me = side_to_move(self, s);
        for c in 0..w {
            for r in 0..h {
                if let Some(p) = self.stone(s, c, r) {
                    let ch = usize::from(p != me);
                    out[(ch * h + r) * w + c] = 1.0;
                }
            }
        }
    }
}

/// Chinese Checkers: the side to move's checkers, the opponent's, and one constant plane (1
/// when the second player is to move; the triangles are not symmetric to the network).
impl Encode for Checkers {
    fn planes(&self) -> Planes {
        let n = self.side();
        Planes {
            channels: 3,
            height: n,
            width: n,
        }
    }

    fn encode(&self, s: &Self::State, out: &mut [f32]) {
        let area = self.side() * self.side();
        out.fill(0.0);
        let me = side_to_move(self, s);
        for (ch, p) in [me, me.other()].into_iter().enumerate() {
            for &sq in self.checkers(s, p) {
                if (sq as usize) < area {
                    out[ch * area + sq as usize] = 1.0;
                }
            }
        }
        if me == Player::P1 {
            out[2 * area..3 * area].fill(1.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::AnyGame;
    use crate::rng::{stream, uniform_index};

    /// Plays random games and checks every decision state's planes: the right length, finite,
    /// a function of the position key (equal keys, equal planes), and the encoder found at
    /// run time agrees with the trait.
    fn check<G: Encode>(g: &G, games: usize) -> usize {
        let dynamic = encoder(g).expect("every game has an encoding");
        assert_eq!(dynamic.planes(), Encode::planes(g));
        let len = Encode::planes(g).len();
        let mut rng = stream(7, "encode-test");
        let (mut actions, mut outcomes) = (Vec::new(), Vec::new());
        let mut distinct = std::collections::BTreeSet::new();
        let mut seen = std::collections::BTreeMap::new();
        for _ in 0..games {
            let mut s = g.initial_state();
            loop {
                match g.turn(&s) {
                    Turn::Terminal(_) => break,
                    Turn::Chance => {
                        g.chance_outcomes(&s, &mut outcomes);
                        let o = outcomes[uniform_index(&mut rng, outcomes.len())].outcome;
                        s = g.apply_chance(&s, o);
                    }
                    Turn::Player(p) => {
                        let mut a = vec![f32::NAN; len];
                        Encode::encode(g, &s, &mut a);
                        let mut b = vec![f32::NAN; len];
                        dynamic.encode(&s, &mut b);
                        assert!(a.iter().all(|x| x.is_finite()));
                        assert_eq!(a, b);
                        let bits: Vec<u32> = a.iter().map(|x| x.to_bits()).collect();
                        if let Some(prev) = seen.insert((g.key(&s), p), bits.clone()) {
                            assert_eq!(prev, bits, "planes depend on more than the position");
                        }
                        distinct.insert(bits);
                        g.legal_actions(&s, &mut actions);
                        s = g.apply(&s, actions[uniform_index(&mut rng, actions.len())]);
                    }
                }
            }
        }
        distinct.len()
    }

    #[test]
    fn every_game_encodes_its_decision_states() {
        for v in [
            "ewn:3x3x3",
            "cdc:PPPP",
            "cdc:KGMR",
            "c4:5x4",
            "checkers:5x5-3",
            "cdc:4x8",
        ] {
            let any: AnyGame = v.parse().unwrap();
            let distinct = crate::with_game!(&any, |g| check(g, 20));
            assert!(distinct > 5, "{v}: only {distinct} distinct encodings");
        }
    }

    #[test]
    fn connect_four_planes_are_from_the_side_to_move() {
        let g = ConnectFour::new(7, 6).unwrap();
        let s = g.parse_moves("4").unwrap();
        let mut out = vec![0.0; Encode::planes(&g).len()];
        Encode::encode(&g, &s, &mut out);
        // The first player's stone (column 4, bottom row) is the opponent's for P1 to move.
        let (w, h) = (7, 6);
        assert_eq!(out[3], 0.0);
        assert_eq!(out[h * w + 3], 1.0);
        assert_eq!(out.iter().sum::<f32>(), 1.0);
    }
}
