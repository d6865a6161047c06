//! The network as the search's leaf evaluator.

use super::Network;
use crate::game::{Action, Game};
use crate::games::Abilities;
use crate::nn::{Scratch, legal_softmax};
use crate::rng::StreamRng;
use crate::search::{Evaluator, Leaf};

/// The network as the search's leaf evaluator: priors the softmax of the legal logits,
/// value the value head's on the [0, 1] scale for the side to move.
pub struct NetEval<'a, G: Game> {
    pub(super) net: &'a Network<G>,
    pub(super) x: Vec<f32>,
    pub(super) scratch: Scratch,
}

impl<G: Abilities> NetEval<'_, G> {
    /// The greedy move at `s` after the game's `past`: the legal action of highest logit,
    /// ties to the lowest action.
    pub fn greedy(&mut self, s: &G::State, past: &[G::State], legal: &[Action]) -> Action {
        self.greedy_value(s, past, legal).0
    }

    /// The greedy move and the value on the [0, 1] scale, from one forward pass.
    pub(crate) fn greedy_value(
        &mut self,
        s: &G::State,
        past: &[G::State],
        legal: &[Action],
    ) -> (Action, f64) {
        let pre = self.net.infer(s, past, &mut self.x, &mut self.scratch);
        let logits = &self.scratch.logits;
        let mut best = legal[0];
        for &a in &legal[1..] {
            if logits[a as usize] > logits[best as usize] {
                best = a;
            }
        }
        (best, self.net.layout.unit_value(pre))
    }

    /// Fills `priors` over `legal` and returns the value on the [0, 1] scale.
    pub(crate) fn priors_value(
        &mut self,
        s: &G::State,
        past: &[G::State],
        legal: &[Action],
        priors: &mut [f64],
    ) -> f64 {
        let pre = self.net.infer(s, past, &mut self.x, &mut self.scratch);
        legal_softmax(&self.scratch.logits, legal, priors);
        self.net.layout.unit_value(pre)
    }
}

impl<G: Abilities> Evaluator<G> for NetEval<'_, G> {
    fn past(&self) -> usize {
        self.net.past()
    }

    fn evaluate(
        &mut self,
        _: &G,
        s: &G::State,
        past: &[G::State],
        legal: &[Action],
        priors: &mut [f64],
        _: &mut StreamRng,
    ) -> f64 {
        self.priors_value(s, past, legal, priors)
    }

    /// One forward pass over all the leaves: each gets the bits it would get alone.
    fn evaluate_batch(&mut self, _: &G, leaves: &mut [Leaf<'_, G>]) {
        let na = self.net.layout.actions();
        self.net
            .forward_states(leaves.iter().map(|l| (l.state, l.past)), &mut self.scratch);
        for (k, l) in leaves.iter_mut().enumerate() {
            let logits = &self.scratch.logits[k * na..(k + 1) * na];
            legal_softmax(logits, l.legal, l.priors);
            l.value = self.net.layout.unit_value(self.scratch.values[k]);
        }
    }
}
