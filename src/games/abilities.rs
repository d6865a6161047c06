//! [`Abilities`]: what only some games can do, asked for one way.
//!
//! Generic code (the run driver, the players, the learners, the evaluation) is generic over
//! [`Game`]; some of it also needs an exact solution, input planes for a network, a greedy
//! heuristic or reference positions. Every registry game implements [`Abilities`] in its own
//! folder and answers each method explicitly: the trait has no default methods, so a game
//! added without deciding an ability does not compile, and no caller guesses a game's type at
//! run time (the metric it feeds cannot silently vanish).

use std::sync::Arc;

use crate::game::{Action, Game};
use crate::nn::encode::Encoder;
use crate::solver::{LoadError, Solution};
use crate::store::Store;

/// A position of a reference test set with what the exact solver says of it.
#[derive(Clone, Debug)]
pub struct ReferencePosition<S> {
    pub state: S,
    /// v* on [0, 1] for the side to move.
    pub value: f64,
    /// The value-preserving moves, ascending.
    pub best: Vec<Action>,
}

/// A reference test set, shared (sets are computed once per process).
pub type ReferenceSet<S> = Arc<Vec<ReferencePosition<S>>>;

/// The abilities only some games have (see the module docs). `None` (or `false`) says the game
/// does not have one.
pub trait Abilities: Game {
    /// The exact value of every position: loaded from the store, or solved and saved there
    /// first. `None`: the game has no exact solver (e.g. 4x8 Chinese dark chess).
    fn solution(&self, store: &mut Store) -> Option<Result<Solution<Self::Key>, LoadError>>;

    /// The test positions S_test the metrics average over (docs/metrics.md); empty for a game
    /// without an exact solver.
    fn test_positions(&self) -> Vec<Self::State>;

    /// Whether the optimal player searches each position exactly instead of loading a
    /// solution (Connect Four boards too large to enumerate, e.g. 7x6).
    fn searches_exactly(&self) -> bool;

    /// With [`Abilities::searches_exactly`]: every legal action of decision state `s` with its
    /// exact value in [-1, 1] for the mover, ascending by action.
    fn exact_action_values(&self, s: &Self::State) -> Option<Vec<(Action, f64)>>;

    /// The greedy heuristic: for each legal action of `s` (in order), its forward gain Psi and
    /// how far back its piece stands (larger = further back). `false` when the game has no
    /// greedy player.
    fn greedy_features(&self, s: &Self::State, legal: &[Action], out: &mut Vec<(i32, i32)>)
    -> bool;

    /// The game's input planes for a network (docs/network.md).
    fn encoder(&self) -> Option<Encoder<Self>>;

    /// The first `n` positions of reference set `name` (Connect Four 7x6's test sets) with
    /// their exact values and best moves. `None`: the game has no such set.
    fn reference_set(
        &self,
        name: &str,
        n: usize,
    ) -> Option<Result<ReferenceSet<Self::State>, String>>;
}
