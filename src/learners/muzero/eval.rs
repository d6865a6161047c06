//! The model at a real position, f(h(s)): the learner's evaluator for everything that asks
//! a model about a real decision state (start policies, the dashboard, the Python package's
//! `Model.evaluate`, ERR_p and MAE_v) and its greedy move. Searches do not use it: they run
//! in the learned model (learned.rs).

use crate::game::{Action, Game};
use crate::games::Abilities;
use crate::nn::legal_softmax;
use crate::rng::StreamRng;
use crate::search::Evaluator;

use super::model::{MuScratch, MuZero};

/// f(h(s)) with buffers of its own.
pub struct MuEval<'a, G: Game> {
    model: &'a MuZero<G>,
    sc: MuScratch,
    state: Vec<f32>,
}

impl<G: Abilities> MuZero<G> {
    /// The evaluator of real positions.
    pub(crate) fn eval(&self) -> MuEval<'_, G> {
        MuEval {
            model: self,
            sc: self.scratch(),
            state: vec![0.0; self.state_len()],
        }
    }
}

impl<G: Abilities> MuEval<'_, G> {
    /// The logits of f(h(s)) over every action (in `self.sc.f.logits`) and the value on the
    /// [0, 1] scale.
    fn infer(&mut self, s: &G::State, past: &[G::State]) -> f64 {
        self.model.represent(s, past, &mut self.sc, &mut self.state);
        self.model.predict(&self.state, &mut self.sc)
    }

    /// The legal action of highest logit (ties to the lowest action) and the value.
    pub(crate) fn greedy_value(
        &mut self,
        s: &G::State,
        past: &[G::State],
        legal: &[Action],
    ) -> (Action, f64) {
        let v = self.infer(s, past);
        let logits = &self.sc.f.logits;
        let mut best = legal[0];
        for &a in &legal[1..] {
            if logits[a as usize] > logits[best as usize] {
                best = a;
            }
        }
        (best, v)
    }

    /// Fills `priors` over `legal` (the softmax of the legal logits) and returns the value.
    pub(crate) fn priors_value(
        &mut self,
        s: &G::State,
        past: &[G::State],
        legal: &[Action],
        priors: &mut [f64],
    ) -> f64 {
        let v = self.infer(s, past);
        legal_softmax(&self.sc.f.logits, legal, priors);
        v
    }
}

impl<G: Abilities> Evaluator<G> for MuEval<'_, G> {
    fn past(&self) -> usize {
        self.model.encoder.past()
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
}
