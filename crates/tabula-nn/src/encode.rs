//! Input features of a network: an optional ability beside [`Game`] (docs/network.md).
//!
//! [`Encode`] writes a decision state as `channels x height x width` planes of `f32`, seen
//! from the side to move (its pieces first), so one network serves both seats. A multilayer
//! perceptron reads the planes flattened; a convolutional net reads them as images.
//!
//! Each game's encoding lives beside its rules (`games/<game>/encode.rs`). The learner is
//! generic over every [`Game`] (docs/learners.md), so it cannot name `G: Encode` in its
//! bounds; `games::encoder` finds the encoding of a game at run time and returns it
//! type-erased as an [`Encoder<G>`].
//!
//! **History** (docs/network.md, "Inputs"): an input may also read the game's earlier decision
//! states (Liu et al.'s last three positions, AlphaGo Zero's last eight). Every caller hands
//! an encoder the state and the game's past, its earlier decision states oldest first, from the
//! start of the game's record; [`DynEncode::past`] says how many of the last of them it reads
//! (at most [`MAX_PAST`]). A position-only input reads none and ignores them.

use std::sync::Arc;

use tabula_core::game::{Game, Player, Turn};

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

    /// What each channel holds, in channel order, in a few words (`tabula encode` prints
    /// them; docs/network.md, "Inputs", says the same at length).
    fn plane_names(&self) -> Vec<String>;

    /// Writes the planes of decision state `s` into `out` (length [`Planes::len`], channel
    /// major, then rows, then columns), overwriting every entry. A pure function of the
    /// state's position key and side to move.
    fn encode(&self, s: &Self::State, out: &mut [f32]);
}

pub use tabula_core::game::{MAX_PAST, last_past};

/// An encoding with its game type erased to `G`'s state type.
pub trait DynEncode<G: Game>: Send + Sync {
    fn planes(&self) -> Planes;

    /// What each channel holds, in channel order ([`Encode::plane_names`]).
    fn plane_names(&self) -> Vec<String>;

    /// How many of the last earlier decision states [`DynEncode::encode`] reads (0: a
    /// function of the position alone), at most [`MAX_PAST`].
    fn past(&self) -> usize {
        0
    }

    /// Writes the planes of decision state `s`, whose game's earlier decision states are
    /// `past` (oldest first; the last [`DynEncode::past`] of them are read, fewer when the
    /// game is younger), into `out`, overwriting every entry.
    fn encode(&self, s: &G::State, past: &[G::State], out: &mut [f32]);
}

impl<G: Encode> DynEncode<G> for G {
    fn planes(&self) -> Planes {
        Encode::planes(self)
    }

    fn plane_names(&self) -> Vec<String> {
        Encode::plane_names(self)
    }

    fn encode(&self, s: &G::State, _: &[G::State], out: &mut [f32]) {
        Encode::encode(self, s, out)
    }
}

/// A game's encoding, shared by every thread.
pub type Encoder<G> = Arc<dyn DynEncode<G>>;

/// The seat whose view decision state `s` is encoded from: the side to move.
pub fn side_to_move<G: Game>(g: &G, s: &G::State) -> Player {
    match g.turn(s) {
        Turn::Player(p) => p,
        // Only decision states are encoded; anything else is read from P0's side.
        _ => Player::P0,
    }
}
