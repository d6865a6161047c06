//! The network as the search's leaf evaluator.

use rand::RngExt;
use serde::{Deserialize, Serialize};

use crate::eval::reference::{
    REFERENCE_METRICS, ReferenceEval, ReferenceSettings, c4_scores, c4_search_scores,
    evaluation_search, greedy_scores, solver_scores,
};
use crate::eval::{MetricDef, MetricValues, WinRate, win_rate_of};
use crate::game::{Action, Game, GameResult};
use crate::game_record::{GameEnd, GameRecord, ReplayError};
use crate::games::Abilities;
use crate::learners::gate::{GateResult, GateSettings, gate_score};
use crate::learners::{
    Checkpoint, CheckpointRefs, EvalContext, Learner, LearnerContext, LearnerError,
    LearnerSettings, ModelSummary, Reference, SettingsCheck, TrainReport,
};
use crate::error::SettingError;
use crate::nn::encode::Encoder;
use crate::nn::{
    Arch, Arith, Example, Head, Layout, Losses, OptimConfig, OptimState, ResNet, Scratch, Trainer,
    ValueHead, Weights, legal_softmax, train_step,
};
use crate::rng::{StreamRng, stream, stream_fmt, uniform_index};
use crate::search::{Evaluator, Leaf};
use crate::store::{Encoded, ObjectHash, Record, Store};
use super::settings::{DEFAULT_TRAIN_STEPS, OptimizerKind, bad, game_name};
use super::{ArchKind, ArithKind, AugmentKind, CheckpointRecord, FIXED_SETTINGS, HeadKind, NETWORK_METRICS, NetSample, Network, NetworkEvaluation, NetworkSettings, OptimizerRecord, ParamsRecord, SELF_PLAY_LANES, ValueHeadKind, settings_of};
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
        legal: &[Action],
        priors: &mut [f64],
    ) -> f64 {
        let pre = self.net.infer(s, &mut self.x, &mut self.scratch);
        legal_softmax(&self.scratch.logits, legal, priors);
        self.net.layout.unit_value(pre)
    }
}

impl<G: Abilities> Evaluator<G> for NetEval<'_, G> {
    fn evaluate(
        &mut self,
        _: &G,
        s: &G::State,
        legal: &[Action],
        priors: &mut [f64],
        _: &mut StreamRng,
    ) -> f64 {
        self.priors_value(s, legal, priors)
    }

    /// One forward pass over all the leaves: each gets the bits it would get alone.
    fn evaluate_batch(&mut self, _: &G, leaves: &mut [Leaf<'_, G>]) {
        let na = self.net.layout.actions();
        self.net
            .forward_states(leaves.iter().map(|l| l.state), &mut self.scratch);
        for (k, l) in leaves.iter_mut().enumerate() {
            let logits = &self.scratch.logits[k * na..(k + 1) * na];
            legal_softmax(logits, l.legal, l.priors);
            l.value = self.net.layout.unit_value(self.scratch.values[k]);
        }
    }
}
