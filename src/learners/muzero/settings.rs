//! `[learner.muzero]`: MuZero's settings, their checks and the keys a branch cannot change
//! (docs/muzero.md, "Settings").

use serde::{Deserialize, Serialize};

use crate::error::SettingError;
use crate::learners::network::OptimizerKeys;
use crate::learners::{LearnerSettings, SettingsCheck};
use crate::nn::OptimConfig;

/// The optimiser's name in the spec.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum MuOptimizer {
    /// SGD with momentum (the paper's, Appendix G "Training").
    #[default]
    #[serde(rename = "sgd")]
    Sgd,
    #[serde(rename = "adam")]
    Adam,
}

/// The value target of an unrolled step (`value_target`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ValueTarget {
    /// The game's final outcome for the side to move (the paper's board-game choice:
    /// Appendix G; td_steps = max_moves in the pseudocode).
    #[default]
    #[serde(rename = "outcome")]
    Outcome,
    /// n-step returns bootstrapped from the search's root values: refused by `validate`,
    /// because a `game/v1` record keeps the root's visit counts but not its value.
    #[serde(rename = "n-step")]
    NStep,
}

/// `[learner.muzero]`: the three networks (MLPs over the game's input planes and the hidden
/// state), the unroll and the training. Defaults: docs/muzero.md, "Settings".
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MuZeroSettings {
    /// The game's input planes by name (absent: the game's default), as the representation's
    /// observation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// The hidden state's size (each element min-max scaled to [0, 1]).
    pub state: u32,
    /// The hidden layers of the representation h, the dynamics g and the prediction f.
    pub representation: Vec<u32>,
    pub dynamics: Vec<u32>,
    pub prediction: Vec<u32>,
    /// K: the steps unrolled through the dynamics (the paper's 5).
    pub unroll_steps: u32,
    pub value_target: ValueTarget,
    pub optimizer: MuOptimizer,
    /// (from_iteration, learning rate), ascending, the first from iteration 1.
    pub lr: Vec<(u32, f64)>,
    pub momentum: f64,
    pub nesterov: bool,
    pub weight_decay: f64,
    pub adam_beta1: f64,
    pub adam_beta2: f64,
    pub adam_eps: f64,
    /// Games in the replay buffer (absent: every game of the window).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_games: Option<u32>,
    pub batch_size: u32,
    /// Optimiser steps per iteration (minibatches drawn with replacement).
    pub train_steps: u32,
    /// `[learner.muzero.stochastic]`: Stochastic MuZero (Antonoglou et al., ICLR 2022):
    /// afterstates, chance codes from an encoder, chance nodes in the search
    /// (docs/muzero.md, "Stochastic MuZero"). Absent: MuZero.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stochastic: Option<StochasticSettings>,
}

/// `[learner.muzero.stochastic]`: the codebook and the three networks Stochastic MuZero
/// adds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StochasticSettings {
    /// C: the codebook's size (the chance codes, one-hot vectors of C features).
    pub codes: u32,
    /// The hidden layers of the afterstate dynamics phi, the afterstate prediction psi and
    /// the encoder e.
    pub afterstate_dynamics: Vec<u32>,
    pub afterstate_prediction: Vec<u32>,
    pub encoder: Vec<u32>,
    /// beta: the weight of the encoder's commitment loss.
    pub commitment: f64,
    /// delta: the weight of the codebook diversity loss (Baevski et al. 2020, wav2vec 2.0,
    /// Section 3.2), 1 - H(mean c^e) / log C over a minibatch's codes; 0 (the default,
    /// SMZ's loss) leaves it out. Left out of the settings record at 0, so runs without it
    /// hash as before.
    #[serde(skip_serializing_if = "is_zero")]
    pub diversity: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl Default for StochasticSettings {
    fn default() -> StochasticSettings {
        StochasticSettings {
            codes: 32,
            afterstate_dynamics: vec![64],
            afterstate_prediction: vec![64],
            encoder: vec![64],
            commitment: 0.25,
            diversity: 0.0,
        }
    }
}

impl Default for MuZeroSettings {
    fn default() -> MuZeroSettings {
        MuZeroSettings {
            input: None,
            state: 32,
            representation: vec![64],
            dynamics: vec![64],
            prediction: vec![64],
            unroll_steps: 5,
            value_target: ValueTarget::Outcome,
            optimizer: MuOptimizer::Sgd,
            lr: vec![(1, 0.1)],
            momentum: 0.9,
            nesterov: false,
            weight_decay: 1e-4,
            adam_beta1: 0.9,
            adam_beta2: 0.999,
            adam_eps: 1e-8,
            replay_games: None,
            batch_size: 256,
            train_steps: 100,
            stochastic: None,
        }
    }
}

/// A range error naming `learner.muzero.KEY`.
pub(super) fn bad(key: &str, value: impl ToString, allowed: &str) -> SettingError {
    SettingError::new(format!("learner.muzero.{key}"), value, allowed)
}

impl MuZeroSettings {
    /// Checks every key (errors name `learner.muzero.KEY` and what is allowed).
    pub(crate) fn validate(&self, check: SettingsCheck<'_>) -> Result<(), SettingError> {
        self.validate_shape()?;
        self.validate_optimizer()?;
        self.validate_training(check)
    }

    fn validate_shape(&self) -> Result<(), SettingError> {
        if !(1..=4096).contains(&self.state) {
            return Err(bad("state", self.state, "an integer from 1 to 4096"));
        }
        for (key, widths) in [
            ("representation", &self.representation),
            ("dynamics", &self.dynamics),
            ("prediction", &self.prediction),
        ] {
            widths_ok(key, widths)?;
        }
        if let Some(st) = &self.stochastic {
            st.validate()?;
        }
        if !(1..=64).contains(&self.unroll_steps) {
            return Err(bad(
                "unroll_steps",
                self.unroll_steps,
                "an integer from 1 to 64 (the paper's K = 5)",
            ));
        }
        if self.value_target == ValueTarget::NStep {
            return Err(bad(
                "value_target",
                "n-step",
                "\"outcome\" (the paper's board-game target); n-step returns need the \
                 search's root values, which game records do not keep",
            ));
        }
        Ok(())
    }

    /// The optimiser keys, checked as the network learner's.
    fn validate_optimizer(&self) -> Result<(), SettingError> {
        OptimizerKeys {
            lr: &self.lr,
            momentum: self.momentum,
            adam_beta1: self.adam_beta1,
            adam_beta2: self.adam_beta2,
            weight_decay: self.weight_decay,
            adam_eps: self.adam_eps,
        }
        .check(&|k: &str, v: String, allowed: &str| bad(k, v, allowed))
    }

    fn validate_training(&self, check: SettingsCheck<'_>) -> Result<(), SettingError> {
        if !(1..=65_536).contains(&self.batch_size) {
            return Err(bad(
                "batch_size",
                self.batch_size,
                "an integer from 1 to 65536",
            ));
        }
        if self.train_steps > 1_000_000 {
            return Err(bad(
                "train_steps",
                self.train_steps,
                "an integer from 0 to 1000000",
            ));
        }
        let most = u64::from(check.window) * u64::from(check.games_per_iteration);
        if let Some(r) = self.replay_games
            && (r == 0 || u64::from(r) > most)
        {
            return Err(bad(
                "replay_games",
                r,
                &format!("an integer from 1 to window x games_per_iteration = {most}"),
            ));
        }
        Ok(())
    }

    pub(super) fn optim(&self) -> OptimConfig {
        match self.optimizer {
            MuOptimizer::Sgd => OptimConfig::Sgd {
                momentum: self.momentum,
                nesterov: self.nesterov,
                weight_decay: self.weight_decay,
            },
            MuOptimizer::Adam => OptimConfig::Adam {
                beta1: self.adam_beta1,
                beta2: self.adam_beta2,
                eps: self.adam_eps,
                weight_decay: self.weight_decay,
            },
        }
    }

    pub(super) fn lr_at(&self, i: u32) -> f64 {
        crate::learners::scheduled(&self.lr, i)
    }
}

/// A list of hidden-layer widths is at most 16 widths from 1 to 65536.
fn widths_ok(key: &str, widths: &[u32]) -> Result<(), SettingError> {
    if widths.len() > 16 || widths.iter().any(|&w| !(1..=65_536).contains(&w)) {
        return Err(bad(
            key,
            format!("{widths:?}"),
            "a list of at most 16 hidden-layer widths, each from 1 to 65536",
        ));
    }
    Ok(())
}

impl StochasticSettings {
    /// Checks every key (errors name `learner.muzero.stochastic.KEY`).
    fn validate(&self) -> Result<(), SettingError> {
        if !(2..=1024).contains(&self.codes) {
            return Err(bad(
                "stochastic.codes",
                self.codes,
                "an integer from 2 to 1024 (the codebook's size C)",
            ));
        }
        for (key, widths) in [
            ("stochastic.afterstate_dynamics", &self.afterstate_dynamics),
            (
                "stochastic.afterstate_prediction",
                &self.afterstate_prediction,
            ),
            ("stochastic.encoder", &self.encoder),
        ] {
            widths_ok(key, widths)?;
        }
        if !(self.commitment.is_finite() && (0.0..=100.0).contains(&self.commitment)) {
            return Err(bad(
                "stochastic.commitment",
                self.commitment,
                "a number from 0 to 100 (the commitment loss's weight beta)",
            ));
        }
        if !(self.diversity.is_finite() && (0.0..=100.0).contains(&self.diversity)) {
            return Err(bad(
                "stochastic.diversity",
                self.diversity,
                "a number from 0 to 100 (the codebook diversity loss's weight delta)",
            ));
        }
        Ok(())
    }
}

/// The MuZero settings of a run (its `[learner.muzero]` table or the defaults).
pub(crate) fn settings_of(s: &LearnerSettings) -> MuZeroSettings {
    s.muzero.clone().unwrap_or_default()
}

/// Settings a branch cannot change: they decide the shapes of the weights or of the
/// optimiser state the branch continues.
pub(crate) const FIXED_SETTINGS: &[(&str, &str)] = &[
    (
        "learner.muzero.input",
        "the representation the branch continues reads this input",
    ),
    (
        "learner.muzero.state",
        "the weights the branch continues have this hidden-state size",
    ),
    (
        "learner.muzero.representation",
        "the weights the branch continues have these layers",
    ),
    (
        "learner.muzero.dynamics",
        "the weights the branch continues have these layers",
    ),
    (
        "learner.muzero.prediction",
        "the weights the branch continues have these layers",
    ),
    (
        "learner.muzero.stochastic",
        "the branch continues a model with (or without) afterstates and chance codes",
    ),
    (
        "learner.muzero.stochastic.codes",
        "the weights the branch continues have this codebook size",
    ),
    (
        "learner.muzero.stochastic.afterstate_dynamics",
        "the weights the branch continues have these layers",
    ),
    (
        "learner.muzero.stochastic.afterstate_prediction",
        "the weights the branch continues have these layers",
    ),
    (
        "learner.muzero.stochastic.encoder",
        "the weights the branch continues have these layers",
    ),
    (
        "learner.muzero.optimizer",
        "the optimiser state the branch continues is this optimiser's",
    ),
];
