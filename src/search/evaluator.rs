//! Leaf evaluators: what a search asks of a new leaf.

use crate::game::{Action, Game, Player, Turn};
use crate::play::{Scratch, random_playout};
use crate::rng::StreamRng;

/// Values a decision state for its side to move and gives priors over its legal actions.
///
/// `evaluate` receives the game's earlier decision states before `s` (`past`, oldest first,
/// at least the last [`Evaluator::past`] of them where the game has them: the game's record
/// before the search's root, then the tree's path to `s`), the legal actions of `s`
/// (ascending) and a `priors` slice of the same length to fill with non-negative numbers summing to 1; it returns the value of `s` in
/// [0, 1] for the player to move. Random draws, if any, come from `rng` (the search's own
/// stream), so a search stays a pure function of its inputs.
///
/// `&mut self` lets an evaluator keep scratch buffers; a shared, read-only model (the
/// learner's lookup table) is wrapped per searcher, e.g. `struct TableEval<'a>(&'a Table, ..)`.
pub trait Evaluator<G: Game> {
    /// How many earlier decision states `evaluate` reads (0: the position alone; a network
    /// whose input has history, docs/network.md "Inputs"), at most
    /// [`crate::game::MAX_PAST`].
    fn past(&self) -> usize {
        0
    }

    fn evaluate(
        &mut self,
        g: &G,
        s: &G::State,
        past: &[G::State],
        legal: &[Action],
        priors: &mut [f64],
        rng: &mut StreamRng,
    ) -> f64;

    /// Evaluates the leaves of several searches at once (self-play's batches across games,
    /// [`crate::selfplay`]): fills each leaf's priors and value. Each leaf brings its
    /// own search's stream, so the draws of a leaf are the ones it would make alone. The
    /// default answers them one by one; an evaluator with a batched model overrides it, and
    /// must give every leaf the bits it would give it alone.
    fn evaluate_batch(&mut self, g: &G, leaves: &mut [Leaf<'_, G>]) {
        for l in leaves.iter_mut() {
            l.value = self.evaluate(g, l.state, l.past, l.legal, l.priors, l.rng);
        }
    }
}

/// One leaf of a batch: its state, the game's earlier decision states (as `evaluate`'s
/// `past`), legal actions (ascending), the priors to fill, its search's stream, and the value
/// to set (for the side to move, in [0, 1]).
pub struct Leaf<'a, G: Game> {
    pub state: &'a G::State,
    pub past: &'a [G::State],
    pub legal: &'a [Action],
    pub priors: &'a mut [f64],
    pub rng: &'a mut StreamRng,
    pub value: f64,
}

/// Fills `priors` with the uniform distribution.
#[inline]
pub(crate) fn uniform_priors(priors: &mut [f64]) {
    let p = 1.0 / priors.len() as f64;
    priors.fill(p);
}

/// Uniform priors and the value 0.5 (a draw) for every leaf: search guided by nothing but the
/// terminal scores it reaches.
#[derive(Copy, Clone, Debug, Default)]
pub struct Uniform;

impl<G: Game> Evaluator<G> for Uniform {
    #[inline]
    fn evaluate(
        &mut self,
        _: &G,
        _: &G::State,
        _: &[G::State],
        _: &[Action],
        priors: &mut [f64],
        _: &mut StreamRng,
    ) -> f64 {
        uniform_priors(priors);
        0.5
    }
}

/// Uniform priors, and as value the mean score of `playouts` uniformly random playouts from
/// the leaf (chance by its probabilities), drawn from the search's stream.
#[derive(Debug)]
pub struct Rollout {
    playouts: u32,
    scratch: Scratch,
}

impl Rollout {
    /// `playouts` random playouts per leaf (at least 1).
    pub fn new(playouts: u32) -> Rollout {
        Rollout {
            playouts: playouts.max(1),
            scratch: Scratch::new(),
        }
    }

    pub fn playouts(&self) -> u32 {
        self.playouts
    }

    /// The mean score for `p` of the playouts from `s` (any state).
    pub fn value_for<G: Game>(
        &mut self,
        g: &G,
        s: &G::State,
        p: Player,
        rng: &mut StreamRng,
    ) -> f64 {
        let mut total = 0.0;
        for _ in 0..self.playouts {
            let (r, _) = random_playout(g, *s, rng, &mut self.scratch);
            total += r.score(p);
        }
        total / f64::from(self.playouts)
    }
}

impl Default for Rollout {
    fn default() -> Rollout {
        Rollout::new(1)
    }
}

impl<G: Game> Evaluator<G> for Rollout {
    fn evaluate(
        &mut self,
        g: &G,
        s: &G::State,
        _: &[G::State],
        _: &[Action],
        priors: &mut [f64],
        rng: &mut StreamRng,
    ) -> f64 {
        uniform_priors(priors);
        let p = match g.turn(s) {
            Turn::Player(p) => p,
            // Search only evaluates decision states; anything else has no side to move.
            _ => Player::P0,
        };
        self.value_for(g, s, p, rng)
    }
}

/// A test evaluator that reads the last `k` earlier decision states: its value and priors are
/// a hash of the leaf's position key and theirs, so any difference in the past it is handed
/// shows in the games it guides.
#[cfg(test)]
#[derive(Clone, Debug)]
pub(crate) struct PastProbe(pub usize);

#[cfg(test)]
impl<G: Game> Evaluator<G> for PastProbe {
    fn past(&self) -> usize {
        self.0
    }

    fn evaluate(
        &mut self,
        g: &G,
        s: &G::State,
        past: &[G::State],
        _: &[Action],
        priors: &mut [f64],
        _: &mut StreamRng,
    ) -> f64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::hash::DefaultHasher::new();
        g.key(s).hash(&mut h);
        for t in past.iter().rev().take(self.0) {
            g.key(t).hash(&mut h);
        }
        let x = h.finish();
        for (i, p) in priors.iter_mut().enumerate() {
            *p = 1.0 + ((x >> (i % 32)) & 3) as f64;
        }
        let total: f64 = priors.iter().sum();
        priors.iter_mut().for_each(|p| *p /= total);
        0.05 + 0.9 * ((x >> 40) as f64 / (1u64 << 24) as f64)
    }
}
