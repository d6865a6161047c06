//! `[learner.network]`: the network learner's settings, their checks and the keys a branch
//! cannot change.

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
use super::{CheckpointRecord, NETWORK_METRICS, NetEval, NetSample, Network, NetworkEvaluation, OptimizerRecord, ParamsRecord, SELF_PLAY_LANES};
    let path = full.split('<').next().unwrap_or(full);
    path.rsplit("::").next().unwrap_or(path)
}

/// A range error naming `learner.network.KEY`.
pub(super) fn bad(key: &str, value: impl ToString, allowed: &str) -> SettingError {
    SettingError::new(format!("learner.network.{key}"), value, allowed)
}

impl NetworkSettings {
    /// Checks every key against the driver's window (errors name `learner.network.KEY`), group
    /// by group in the order of the keys in the spec.
    pub(crate) fn validate(&self, check: SettingsCheck<'_>) -> Result<(), SettingError> {
        self.validate_shape()?;
        self.validate_optimizer()?;
        self.validate_training()?;
        if let Some(r) = &self.reference {
            r.validate()?;
        }
        if let Some(gate) = &self.gate {
            gate.validate()?;
        }
        self.validate_replay(check)
    }

    /// The architecture: widths, blocks, channels and heads.
    fn validate_shape(&self) -> Result<(), SettingError> {
        if self.hidden.len() > 16 || self.hidden.iter().any(|&h| h == 0 || h > 4096) {
            return Err(bad(
                "hidden",
                format!("{:?}", self.hidden),
                "at most 16 widths, each from 1 to 4096",
            ));
        }
        if self.blocks > 40 {
            return Err(bad("blocks", self.blocks, "an integer from 0 to 40"));
        }
        if self.channels == 0 || self.channels > 512 {
            return Err(bad("channels", self.channels, "an integer from 1 to 512"));
        }
        if self.bottleneck > 512 {
            return Err(bad(
                "bottleneck",
                self.bottleneck,
                "0 (basic blocks) or the bottleneck's inner channels, 1 to 512",
            ));
        }
        for (key, x, most) in [
            ("policy_channels", self.policy_channels, 64),
            ("value_channels", self.value_channels, 64),
            ("value_hidden", self.value_hidden, 4096),
        ] {
            if let Some(x) = x {
                if x == 0 || x > most {
                    return Err(bad(key, x, &format!("an integer from 1 to {most}")));
                }
                if self.head != HeadKind::Conv {
                    return Err(bad(key, x, "set only with head = \"conv\""));
                }
            }
        }
        if self.arch == ArchKind::Mlp {
            let resnet_only = [
                ("bottleneck", self.bottleneck != 0),
                ("batch_norm", self.batch_norm),
                ("head", self.head != HeadKind::Dense),
            ];
            if let Some((key, _)) = resnet_only.iter().find(|k| k.1) {
                return Err(bad(key, "set", "only with arch = \"resnet\""));
            }
        }
        Ok(())
    }

    /// The optimiser: the learning-rate schedule, momenta, weight decay and epsilon.
    fn validate_optimizer(&self) -> Result<(), SettingError> {
        let lr = &self.lr;
        if lr.is_empty() || lr[0].0 != 1 {
            return Err(bad(
                "lr",
                format!("{lr:?}"),
                "a non-empty list of [from_iteration, rate] pairs, the first from iteration 1",
            ));
        }
        for (i, &(from, rate)) in lr.iter().enumerate() {
            if !(rate.is_finite() && rate > 0.0 && rate <= 10.0) || (i > 0 && from <= lr[i - 1].0) {
                return Err(bad(
                    &format!("lr[{i}]"),
                    format!("[{from}, {rate}]"),
                    "a rate > 0 and at most 10, from_iteration strictly increasing",
                ));
            }
        }
        for (key, x) in [
            ("momentum", self.momentum),
            ("adam_beta1", self.adam_beta1),
            ("adam_beta2", self.adam_beta2),
        ] {
            if !(x.is_finite() && (0.0..1.0).contains(&x)) {
                return Err(bad(key, x, "a number in [0, 1)"));
            }
        }
        // Upper bounds keep the arithmetic finite (a larger step overflows f32 within one
        // update); what still diverges is caught by the driver as a NaN metric.
        if !(0.0..=1.0).contains(&self.weight_decay) {
            return Err(bad(
                "weight_decay",
                self.weight_decay,
                "a number from 0 to 1 (the studies use 1e-4)",
            ));
        }
        if !(1e-20..=1.0).contains(&self.adam_eps) {
            return Err(bad(
                "adam_eps",
                self.adam_eps,
                "a number from 1e-20 to 1 (default 1e-8; the engine computes in f32)",
            ));
        }
        Ok(())
    }

    /// The training: minibatches, steps or epochs, and the retained fraction.
    fn validate_training(&self) -> Result<(), SettingError> {
        if self.batch_size == 0 || self.batch_size > 65_536 {
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
        if let Some(e) = self.train_epochs {
            if !(1..=1000).contains(&e) {
                return Err(bad(
                    "train_epochs",
                    e,
                    "an integer from 1 to 1000 (passes over the replay buffer; Liu et al. \
                     use 2 and 5)",
                ));
            }
            if self.train_steps != DEFAULT_TRAIN_STEPS {
                return Err(bad(
                    "train_steps",
                    self.train_steps,
                    "absent when learner.network.train_epochs is given (give one of \
                     train_steps and train_epochs)",
                ));
            }
        }
        if !(self.retain > 0.0 && self.retain <= 1.0) {
            return Err(bad(
                "retain",
                self.retain,
                "a number in (0, 1]: the fraction of samples kept (Liu et al. keep 0.03 to 0.05)",
            ));
        }
        Ok(())
    }

    /// The replay buffer within the driver's window.
    fn validate_replay(&self, check: SettingsCheck<'_>) -> Result<(), SettingError> {
        let most = u64::from(check.window) * u64::from(check.games_per_iteration);
        if let Some(r) = self.replay_games
            && (r == 0 || u64::from(r) > most)
        {
            return Err(bad(
                "replay_games",
                r,
                &format!(
                    "an integer from 1 to window x games_per_iteration = {most} (the buffer \
                     draws on the driver's window; raise `window` for a larger buffer)"
                ),
            ));
        }
        Ok(())
    }

    /// The kernels' arithmetic (absent: `separate`, see `arithmetic`).
    pub(crate) fn arith(&self) -> Arith {
        match self.arithmetic {
            Some(ArithKind::Fused) => Arith::Fused,
            Some(ArithKind::Separate) | None => Arith::Separate,
        }
    }

    /// A new run's settings: an absent `arithmetic` becomes `fused` (in a stored record
    /// absence means `separate`, the arithmetic of the runs that predate the key).
    pub(crate) fn for_new_run(&mut self) {
        self.arithmetic.get_or_insert(ArithKind::Fused);
    }

    pub(super) fn arch(&self) -> Arch {
        match self.arch {
            ArchKind::Mlp => Arch::Mlp {
                hidden: self.hidden.iter().map(|&h| h as usize).collect(),
            },
            ArchKind::ResNet => Arch::ResNet(ResNet {
                blocks: self.blocks as usize,
                channels: self.channels as usize,
                bottleneck: (self.bottleneck > 0).then_some(self.bottleneck as usize),
                batch_norm: self.batch_norm,
                head: match self.head {
                    HeadKind::Dense => Head::Dense,
                    HeadKind::Conv => Head::Conv {
                        policy_channels: self.policy_channels.unwrap_or(2) as usize,
                        value_channels: self.value_channels.unwrap_or(1) as usize,
                        value_hidden: self.value_hidden.unwrap_or(256) as usize,
                    },
                },
            }),
        }
    }

    pub(super) fn optim(&self) -> OptimConfig {
        match self.optimizer {
            OptimizerKind::Sgd => OptimConfig::Sgd {
                momentum: self.momentum,
                nesterov: self.nesterov,
                weight_decay: self.weight_decay,
            },
            OptimizerKind::Adam => OptimConfig::Adam {
                beta1: self.adam_beta1,
                beta2: self.adam_beta2,
                eps: self.adam_eps,
                weight_decay: self.weight_decay,
            },
        }
    }

    /// The learning rate of iteration `i` (1-based).
    pub(crate) fn lr_at(&self, i: u32) -> f64 {
        crate::learners::scheduled(&self.lr, i)
    }
}

/// The network settings of a run (its `[learner.network]` table or the defaults).
pub(crate) fn settings_of(s: &LearnerSettings) -> NetworkSettings {
    s.network.clone().unwrap_or_default()
}

/// Settings a branch cannot change ([`crate::learners::LearnerKind::fixed_settings`]): they decide the
/// shape of the weights or of the optimiser state the branch continues.
pub(crate) const FIXED_SETTINGS: &[(&str, &str)] = &[
    (
        "learner.network.arch",
        "the weights the branch continues have its shape",
    ),
    (
        "learner.network.hidden",
        "the weights the branch continues have its shape",
    ),
    (
        "learner.network.blocks",
        "the weights the branch continues have its shape",
    ),
    (
        "learner.network.channels",
        "the weights the branch continues have its shape",
    ),
    (
        "learner.network.bottleneck",
        "the weights the branch continues have its shape",
    ),
    (
        "learner.network.batch_norm",
        "the weights the branch continues have its shape",
    ),
    (
        "learner.network.head",
        "the weights the branch continues have its shape",
    ),
    (
        "learner.network.policy_channels",
        "the weights the branch continues have its shape",
    ),
    (
        "learner.network.value_channels",
        "the weights the branch continues have its shape",
    ),
    (
        "learner.network.value_hidden",
        "the weights the branch continues have its shape",
    ),
    (
        "learner.network.optimizer",
        "the optimiser state the branch continues is this optimiser's",
    ),
];
