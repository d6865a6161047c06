//! The network learner (`[learner] kind = "network"`): AlphaZero with a neural network (the
//! hand-written nets of [`crate::nn`]) over a game's input planes ([`crate::nn::encode`]). See
//! docs/network.md.
//!
//! - **Samples**: every fully searched decision of a stored game: its planes, legal actions,
//!   the search's visit distribution and the game's outcome for the side to move.
//! - **Training**: the replay buffer is the last `replay_games` games of the driver's window
//!   (oldest first); each iteration takes `train_steps` minibatches of `batch_size` samples
//!   drawn uniformly with replacement from the stream `network-train(i)` of the model seed,
//!   and one optimiser step per minibatch at the iteration's learning rate.
//! - **Checkpoint** (every iteration, full): `network-params/v1` (the weights),
//!   `network-optimizer/v1` (the optimiser's state) and the root `network-checkpoint/v1`,
//!   which names both and the last step's losses; so resume and verify continue bit for bit.
//! - **Evaluation** (`network-evaluation/v1`): WR_p, ERR_p and MAE_v on solved variants (the
//!   greedy policy, and the value (tanh + 1) / 2), coverage `seen`, and the training losses.

use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::gate::{GateResult, GateSettings, gate_score};
use super::tabular::TABULAR_METRICS as SHARED;
use super::{
    Checkpoint, CheckpointRefs, EvalContext, Learner, LearnerContext, LearnerError,
    LearnerSettings, ModelSummary, Reference, SettingsCheck, TrainReport,
};
use crate::error::SettingError;
use crate::eval::reference::{
    REFERENCE_METRICS, ReferenceEval, ReferenceSettings, c4_scores, c4_search_scores,
    evaluation_search, greedy_scores, solver_scores,
};
use crate::eval::{MetricDef, MetricValues, WinRate, win_rate_of};
use crate::game::{Action, Game, GameResult};
use crate::game_record::{GameEnd, GameRecord, ReplayError};
use crate::games::Abilities;
use crate::nn::encode::Encoder;
use crate::nn::{
    Arch, Arith, Example, Head, Layout, Losses, OptimConfig, OptimState, ResNet, Scratch, Trainer,
    ValueHead, Weights, legal_softmax, train_step,
};
use crate::rng::{StreamRng, stream, stream_fmt, uniform_index};
use crate::search::{Evaluator, Leaf};
use crate::store::{Encoded, ObjectHash, Record, Store};

/// The architecture's name in the spec.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ArchKind {
    #[default]
    #[serde(rename = "mlp")]
    Mlp,
    #[serde(rename = "resnet")]
    ResNet,
}

/// The residual net's heads in the spec.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum HeadKind {
    #[default]
    #[serde(rename = "dense")]
    Dense,
    #[serde(rename = "conv")]
    Conv,
}

fn is_zero(x: &u32) -> bool {
    *x == 0
}

fn is_false(x: &bool) -> bool {
    !*x
}

fn is_dense(x: &HeadKind) -> bool {
    *x == HeadKind::Dense
}

/// How the network's kernels add each term (docs/network.md, "Kernels").
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ArithKind {
    /// A fused multiply-add, rounded once (the default of new runs).
    #[serde(rename = "fused")]
    Fused,
    /// A multiply, then an add, each rounded (runs stored before the key existed).
    #[serde(rename = "separate")]
    Separate,
}

/// The value head's squashing in the spec (`nn::ValueHead`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ValueHeadKind {
    /// tanh, in [-1, 1], trained against 2z - 1 (AlphaZero's).
    #[default]
    #[serde(rename = "tanh")]
    Tanh,
    /// The logistic sigmoid, in [0, 1], trained against z (the tabular learner's).
    #[serde(rename = "sigmoid")]
    Sigmoid,
}

impl ValueHeadKind {
    fn head(self) -> ValueHead {
        match self {
            ValueHeadKind::Tanh => ValueHead::Tanh,
            ValueHeadKind::Sigmoid => ValueHead::Sigmoid,
        }
    }
}

fn is_tanh(x: &ValueHeadKind) -> bool {
    *x == ValueHeadKind::Tanh
}

/// Data augmentation of the samples (`augment`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum AugmentKind {
    /// The samples as played.
    #[default]
    #[serde(rename = "none")]
    None,
    /// Each kept sample and its mirror image (the game's `mirror` ability; Liu et al.'s
    /// two-fold augmentation of Chinese Checkers).
    #[serde(rename = "mirror")]
    Mirror,
}

fn is_no_augment(x: &AugmentKind) -> bool {
    *x == AugmentKind::None
}

fn is_one(x: &f64) -> bool {
    *x == 1.0
}

/// `train_steps`' default (a spec that gives `train_epochs` leaves it there).
const DEFAULT_TRAIN_STEPS: u32 = 100;

/// The optimiser's name in the spec.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum OptimizerKind {
    #[default]
    #[serde(rename = "sgd")]
    Sgd,
    #[serde(rename = "adam")]
    Adam,
}

/// `[learner.network]`: the network, its optimiser and its training (defaults: the 2023
/// study's optimiser, SGD with Nesterov momentum 0.9 and weight decay 1e-4, batches of 256).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NetworkSettings {
    /// `mlp` or `resnet`.
    pub arch: ArchKind,
    /// MLP: the hidden layers' widths.
    pub hidden: Vec<u32>,
    /// ResNet: residual blocks and channels.
    pub blocks: u32,
    pub channels: u32,
    /// ResNet: bottleneck blocks with this many inner channels (1x1, 3x3, 1x1; He et al.
    /// 2016); 0: basic blocks of two 3x3 convolutions. The keys below are left out of the
    /// settings record at their defaults, so earlier runs' settings hash as before.
    #[serde(skip_serializing_if = "is_zero")]
    pub bottleneck: u32,
    /// ResNet: batch normalisation after every convolution (no convolution biases).
    #[serde(skip_serializing_if = "is_false")]
    pub batch_norm: bool,
    /// ResNet: `dense` heads (fully connected from the trunk) or AlphaGo Zero's `conv` heads.
    #[serde(skip_serializing_if = "is_dense")]
    pub head: HeadKind,
    /// Conv heads: the policy head's 1x1 channels (default 2), the value head's (default 1)
    /// and its hidden layer's width (default 256), AlphaGo Zero's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_channels: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_channels: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_hidden: Option<u32>,
    /// The kernels' arithmetic: `fused` (a spec's default) or `separate`. Absent from a
    /// stored record: `separate`, the arithmetic of every run stored before this key
    /// existed, so that they verify and resume with their own bits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arithmetic: Option<ArithKind>,
    /// The value head: `tanh` (in [-1, 1]; the default, AlphaZero's) or `sigmoid` (in
    /// [0, 1]). Left out of the record at its default, so earlier runs hash as before.
    #[serde(skip_serializing_if = "is_tanh")]
    pub value_head: ValueHeadKind,
    /// `sgd` or `adam`.
    pub(crate) optimizer: OptimizerKind,
    /// (from_iteration, learning rate), ascending, the first from iteration 1.
    pub(crate) lr: Vec<(u32, f64)>,
    /// SGD.
    pub(crate) momentum: f64,
    pub(crate) nesterov: bool,
    /// L2 weight decay (both optimisers).
    pub(crate) weight_decay: f64,
    /// Adam.
    pub(crate) adam_beta1: f64,
    pub(crate) adam_beta2: f64,
    pub(crate) adam_eps: f64,
    /// Games in the replay buffer (absent: every game of the window).
    pub replay_games: Option<u32>,
    pub batch_size: u32,
    /// Optimiser steps per iteration (minibatches drawn with replacement).
    pub train_steps: u32,
    /// Instead of `train_steps`: passes over the replay buffer per iteration, each a
    /// permutation in minibatches of `batch_size` (Liu et al.: 2 in stage 1, 5 in stage 2).
    /// The four keys below are left out of the settings record at their defaults, so earlier
    /// runs' settings hash as before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub train_epochs: Option<u32>,
    /// Each sample of a stored game is kept with this probability, in (0, 1] (default 1:
    /// every sample; Liu et al. keep 3-5%), drawn from a stream of the game record.
    #[serde(skip_serializing_if = "is_one")]
    pub retain: f64,
    /// `none` or `mirror` (each kept sample's mirror image too).
    #[serde(skip_serializing_if = "is_no_augment")]
    pub augment: AugmentKind,
    /// No samples from drawn games (Liu et al. discard games over the move limit).
    #[serde(skip_serializing_if = "is_false")]
    pub skip_draws: bool,
    /// `[learner.network.reference]`: the reference metrics of unsolved variants (absent:
    /// their defaults). Left out of the settings record when absent, so the settings of
    /// earlier runs hash as before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<ReferenceSettings>,
    /// `[learner.network.gate]`: gating against the best model M* (learners/gate.rs; absent:
    /// none, self-play uses the trained model). Left out of the record when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateSettings>,
}

impl Default for NetworkSettings {
    fn default() -> NetworkSettings {
        NetworkSettings {
            arch: ArchKind::Mlp,
            hidden: vec![64, 64],
            blocks: 2,
            channels: 32,
            bottleneck: 0,
            batch_norm: false,
            head: HeadKind::Dense,
            policy_channels: None,
            value_channels: None,
            value_hidden: None,
            arithmetic: None,
            value_head: ValueHeadKind::Tanh,
            optimizer: OptimizerKind::Sgd,
            lr: vec![(1, 0.1)],
            momentum: 0.9,
            nesterov: true,
            weight_decay: 1e-4,
            adam_beta1: 0.9,
            adam_beta2: 0.999,
            adam_eps: 1e-8,
            replay_games: None,
            batch_size: 256,
            train_steps: DEFAULT_TRAIN_STEPS,
            train_epochs: None,
            retain: 1.0,
            augment: AugmentKind::None,
            skip_draws: false,
            reference: None,
            gate: None,
        }
    }
}

/// The game's type name (`Ewn`, `Checkers`, `Go`), for errors raised where only its type is
/// known.
fn game_name<G>() -> &'static str {
    let full = std::any::type_name::<G>();
    let path = full.split('<').next().unwrap_or(full);
    path.rsplit("::").next().unwrap_or(path)
}

/// A range error naming `learner.network.KEY`.
fn bad(key: &str, value: impl ToString, allowed: &str) -> SettingError {
    SettingError::new(format!("learner.network.{key}"), value, allowed)
}

impl NetworkSettings {
    /// Checks every key against the driver's window (errors name `learner.network.KEY`).
    pub(crate) fn validate(&self, check: SettingsCheck<'_>) -> Result<(), SettingError> {
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
        if let Some(r) = &self.reference {
            r.validate()?;
        }
        if let Some(gate) = &self.gate {
            gate.validate()?;
        }
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

    fn arch(&self) -> Arch {
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

    fn optim(&self) -> OptimConfig {
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
        super::scheduled(&self.lr, i)
    }
}

/// The network settings of a run (its `[learner.network]` table or the defaults).
pub(crate) fn settings_of(s: &LearnerSettings) -> NetworkSettings {
    s.network.clone().unwrap_or_default()
}

/// Settings a branch cannot change ([`super::LearnerKind::fixed_settings`]): they decide the
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

/// `network-params/v1`: a network's weights, in layout order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ParamsRecord {
    pub values: Vec<f32>,
}

impl Record for ParamsRecord {
    const KIND: &'static str = "network-params/v1";
}

/// `network-optimizer/v1`: the optimiser's state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct OptimizerRecord {
    pub state: OptimState,
}

impl Record for OptimizerRecord {
    const KIND: &'static str = "network-optimizer/v1";
}

/// Field `i` of a record read as a tuple (`expecting`: how many fields it may have), for the
/// records whose last fields are written only when present.
fn field<'de, T: Deserialize<'de>, A: serde::de::SeqAccess<'de>>(
    seq: &mut A,
    i: usize,
    expecting: &'static str,
) -> Result<T, A::Error> {
    seq.next_element()?
        .ok_or_else(|| serde::de::Error::invalid_length(i, &expecting))
}

/// `network-checkpoint/v1`: the root of a checkpoint. `best`, the weights of the best model
/// M* under gating (learners/gate.rs), is written last and only when present, so a
/// checkpoint without it has the bytes it had before gating existed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CheckpointRecord {
    pub iteration: u32,
    /// Parameters in all (a check against the run's architecture).
    pub parameters: u64,
    pub params: ObjectHash,
    pub(crate) optimizer: ObjectHash,
    /// Mean losses of the iteration's last training step.
    pub(crate) loss_policy: f64,
    pub(crate) loss_value: f64,
    /// Samples in the replay buffer at the last training.
    pub buffer: u64,
    /// M*'s `network-params/v1` (gating only).
    pub(crate) best: Option<ObjectHash>,
}

impl Serialize for CheckpointRecord {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let mut t = s.serialize_tuple(7 + usize::from(self.best.is_some()))?;
        t.serialize_element(&self.iteration)?;
        t.serialize_element(&self.parameters)?;
        t.serialize_element(&self.params)?;
        t.serialize_element(&self.optimizer)?;
        t.serialize_element(&self.loss_policy)?;
        t.serialize_element(&self.loss_value)?;
        t.serialize_element(&self.buffer)?;
        if let Some(b) = &self.best {
            t.serialize_element(b)?;
        }
        t.end()
    }
}

impl<'de> Deserialize<'de> for CheckpointRecord {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<CheckpointRecord, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = CheckpointRecord;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a network checkpoint")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<CheckpointRecord, A::Error> {
                const E: &str = "7 or 8 fields";
                Ok(CheckpointRecord {
                    iteration: field(&mut seq, 0, E)?,
                    parameters: field(&mut seq, 1, E)?,
                    params: field(&mut seq, 2, E)?,
                    optimizer: field(&mut seq, 3, E)?,
                    loss_policy: field(&mut seq, 4, E)?,
                    loss_value: field(&mut seq, 5, E)?,
                    buffer: field(&mut seq, 6, E)?,
                    // The bytes end here without gating: read as "no M*".
                    best: seq.next_element().ok().flatten(),
                })
            }
        }
        d.deserialize_tuple(8, V)
    }
}

impl Record for CheckpointRecord {
    const KIND: &'static str = "network-checkpoint/v1";
}

/// `network-evaluation/v1`: the first eight fields, then the reference metrics
/// ([`crate::eval::reference`]) only where they were measured. Postcard writes a struct as its
/// fields one after another, so an evaluation without them has exactly the bytes it had
/// before they existed (the heads of earlier runs do not move), and a stored one without
/// them reads back with `reference: None` (see the serde impls below).
#[derive(Clone, Debug, PartialEq)]
pub struct NetworkEvaluation {
    pub iteration: u32,
    pub wr_p: Option<WinRate>,
    pub err_p: Option<f64>,
    pub mae_v: Option<f64>,
    pub seen: u64,
    pub(crate) loss_policy: f64,
    pub(crate) loss_value: f64,
    pub buffer: u64,
    pub reference: Option<ReferenceEval>,
    /// The iteration's gating match (learners/gate.rs): written after the reference metrics
    /// (empty ones standing in when there are none), only under gating.
    pub gate: Option<GateResult>,
}

impl Serialize for NetworkEvaluation {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let reference = self.reference.is_some() || self.gate.is_some();
        let fields = 8 + usize::from(reference) + usize::from(self.gate.is_some());
        let mut t = s.serialize_tuple(fields)?;
        t.serialize_element(&self.iteration)?;
        t.serialize_element(&self.wr_p)?;
        t.serialize_element(&self.err_p)?;
        t.serialize_element(&self.mae_v)?;
        t.serialize_element(&self.seen)?;
        t.serialize_element(&self.loss_policy)?;
        t.serialize_element(&self.loss_value)?;
        t.serialize_element(&self.buffer)?;
        if reference {
            t.serialize_element(&self.reference.clone().unwrap_or_default())?;
        }
        if let Some(gate) = &self.gate {
            t.serialize_element(gate)?;
        }
        t.end()
    }
}

impl<'de> Deserialize<'de> for NetworkEvaluation {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<NetworkEvaluation, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = NetworkEvaluation;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a network evaluation")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<NetworkEvaluation, A::Error> {
                const E: &str = "8 to 10 fields";
                Ok(NetworkEvaluation {
                    iteration: field(&mut seq, 0, E)?,
                    wr_p: field(&mut seq, 1, E)?,
                    err_p: field(&mut seq, 2, E)?,
                    mae_v: field(&mut seq, 3, E)?,
                    seen: field(&mut seq, 4, E)?,
                    loss_policy: field(&mut seq, 5, E)?,
                    loss_value: field(&mut seq, 6, E)?,
                    buffer: field(&mut seq, 7, E)?,
                    // The bytes end here in an evaluation without reference metrics: postcard
                    // reports the end of its input, read as "not measured".
                    reference: seq
                        .next_element::<ReferenceEval>()
                        .ok()
                        .flatten()
                        .filter(|r| *r != ReferenceEval::default()),
                    gate: seq.next_element().ok().flatten(),
                })
            }
        }
        d.deserialize_tuple(10, V)
    }
}

impl Record for NetworkEvaluation {
    const KIND: &'static str = "network-evaluation/v1";
}

const OWN_METRICS: [MetricDef; 12] = [
    SHARED[0],
    SHARED[1],
    SHARED[2],
    SHARED[3],
    SHARED[4],
    SHARED[5],
    SHARED[6],
    SHARED[7],
    SHARED[11],
    MetricDef {
        name: "loss_policy",
        description: "network: mean policy cross-entropy of the iteration's last minibatch",
    },
    MetricDef {
        name: "loss_value",
        description: "network: mean squared value error ([-1, 1] scale) of the iteration's \
                      last minibatch",
    },
    MetricDef {
        name: "replay_samples",
        description: "network: samples in the replay buffer at the iteration's training",
    },
];

/// The gating match's metrics (learners/gate.rs).
const GATE_METRICS: [MetricDef; 2] = [
    MetricDef {
        name: "gate_score",
        description: "network with gating: the trained model's score against the best model \
                      M* in the iteration's gating games",
    },
    MetricDef {
        name: "gate_promoted",
        description: "network with gating: 1 when the trained model replaced M*, else 0",
    },
];

const ALL_METRICS: [MetricDef; 14 + REFERENCE_METRICS.len()] = {
    let mut out = [OWN_METRICS[0]; 14 + REFERENCE_METRICS.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = if i < 12 {
            OWN_METRICS[i]
        } else if i < 12 + REFERENCE_METRICS.len() {
            REFERENCE_METRICS[i - 12]
        } else {
            GATE_METRICS[i - 12 - REFERENCE_METRICS.len()]
        };
        i += 1;
    }
    out
};

/// The network learner's metrics: the shared WR_p, ERR_p, MAE_v and coverage definitions,
/// its training losses, the reference metrics of unsolved variants
/// ([`crate::eval::reference`]), then the gating match's.
pub(crate) const NETWORK_METRICS: &[MetricDef] = &ALL_METRICS;

/// Self-play games a worker plays at once (docs/network.md, "Throughput").
pub(crate) const SELF_PLAY_LANES: usize = 32;

/// One training sample: the example, and whether it is its game's first.
#[derive(Clone, Debug)]
pub struct NetSample {
    pub example: Example,
    pub first: bool,
}

/// The network learner's model.
pub struct Network<G: Game> {
    settings: NetworkSettings,
    layout: Layout,
    params: Vec<f32>,
    /// `params` packed for inference (rebuilt whenever `params` changes).
    weights: Weights,
    optim: OptimConfig,
    opt: OptimState,
    encoder: Encoder<G>,
    losses: Losses,
    buffer: u64,
    /// The game (the gating match plays it).
    game: G,
    /// Under gating, the best model M*: what self-play, evaluation and `model:RUN@I` use
    /// (learners/gate.rs). `None` without gating.
    best: Option<Box<Network<G>>>,
    /// The last gating match.
    gate: Option<GateResult>,
}

impl<G: Game> std::fmt::Debug for Network<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Network")
            .field("arch", &self.settings.arch)
            .field("parameters", &self.params.len())
            .finish()
    }
}

impl<G: Abilities> Network<G> {
    fn build(g: &G, ctx: LearnerContext<'_>) -> Result<Network<G>, LearnerError> {
        let settings = settings_of(ctx.learner);
        let encoder = g.encoder().ok_or_else(|| {
            LearnerError::Usage(format!(
                "learner.kind = \"network\": {} has no input encoding",
                g.variant()
            ))
        })?;
        let layout = Layout::new(&settings.arch(), encoder.planes(), g.num_actions())
            .with_arith(settings.arith())
            .with_value_head(settings.value_head.head());
        let params = layout.init(&mut stream(ctx.model_seed, "network-init"));
        let optim = settings.optim();
        let opt = OptimState::new(&optim, layout.params());
        let weights = layout.weights(&params);
        let mut net = Network {
            settings,
            layout,
            weights,
            params,
            optim,
            opt,
            encoder,
            losses: Losses::default(),
            buffer: 0,
            game: g.clone(),
            best: None,
            gate: None,
        };
        net.best = net.settings.gate.is_some().then(|| Box::new(net.copy()));
        Ok(net)
    }

    /// A copy of the model (weights, settings, optimiser state) without M*.
    fn copy(&self) -> Network<G> {
        Network {
            settings: self.settings.clone(),
            layout: self.layout.clone(),
            weights: self.weights.clone(),
            params: self.params.clone(),
            optim: self.optim,
            opt: self.opt.clone(),
            encoder: self.encoder.clone(),
            losses: self.losses,
            buffer: self.buffer,
            game: self.game.clone(),
            best: None,
            gate: None,
        }
    }

    /// The model that plays: M* under gating, else the trained model.
    fn playing(&self) -> &Network<G> {
        self.best.as_deref().unwrap_or(self)
    }

    /// Under gating, the trained model plays M* after iteration `iteration`'s training and
    /// replaces it when its score is above the threshold (learners/gate.rs).
    fn gate(&mut self, ctx: LearnerContext<'_>, iteration: u32) {
        let (Some(gate), Some(best)) = (&self.settings.gate, &self.best) else {
            return;
        };
        let search = evaluation_search(&ctx.search.at_iteration(iteration));
        let score = gate_score(
            &self.game,
            gate,
            search,
            ctx.model_seed,
            iteration,
            || self.eval(),
            || best.eval(),
        );
        let promoted = score > gate.threshold;
        if promoted {
            self.best = Some(Box::new(self.copy()));
        }
        self.gate = Some(GateResult { score, promoted });
    }

    /// `train_epochs` passes over `buffer`: pass k takes the buffer in the order of a
    /// permutation (Fisher-Yates, from the identity, drawn from the stream
    /// `network-epochs(i)` of the model seed, passes one after another), in minibatches of
    /// `batch_size` (the last one shorter), one optimiser step each.
    fn train_epochs(
        &mut self,
        ctx: LearnerContext<'_>,
        iteration: u32,
        lr: f64,
        epochs: u32,
        buffer: &[&Example],
    ) -> TrainReport {
        let mut rng = stream_fmt(ctx.model_seed, format_args!("network-epochs({iteration})"));
        let b = self.settings.batch_size as usize;
        let mut order: Vec<usize> = Vec::with_capacity(buffer.len());
        let mut trainer = Trainer::new(&self.layout);
        for _ in 0..epochs {
            order.clear();
            order.extend(0..buffer.len());
            for i in (1..order.len()).rev() {
                order.swap(i, uniform_index(&mut rng, i + 1));
            }
            for batch in order.chunks(b) {
                self.losses = train_step(
                    &self.layout,
                    &mut self.params,
                    &mut self.opt,
                    &self.optim,
                    lr,
                    buffer,
                    batch,
                    &mut trainer,
                );
            }
        }
        if !buffer.is_empty() {
            self.weights = self.layout.weights(&self.params);
        }
        TrainReport {
            samples: u64::from(epochs) * buffer.len() as u64,
            units: self.buffer,
            beta: lr,
        }
    }

    /// The input planes of `s` into `x` (the layout's input length).
    pub(crate) fn encode(&self, s: &G::State, x: &mut [f32]) {
        self.encoder.encode(s, x);
    }

    /// The learning rate of iteration `i` (`lr`).
    pub(crate) fn lr_at(&self, i: u32) -> f64 {
        self.settings.lr_at(i)
    }

    /// One Deep Q-Learning step ([`crate::nn::q_train_step`]); the inference weights follow.
    /// Returns the mean Huber loss and mean |TD error| before the step.
    pub(crate) fn q_step(
        &mut self,
        lr: f64,
        delta: f64,
        examples: &[crate::nn::QExample<'_>],
        trainer: &mut Trainer,
    ) -> (f64, f64) {
        let out = crate::nn::q_train_step(
            &self.layout,
            &mut self.params,
            &mut self.opt,
            &self.optim,
            lr,
            delta,
            examples,
            trainer,
        );
        self.weights = self.layout.weights(&self.params);
        out
    }

    /// Parameters in all.
    pub fn parameters(&self) -> usize {
        self.params.len()
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn params(&self) -> &[f32] {
        &self.params
    }

    /// The logits and the value (before the value head's squashing) of decision state `s`,
    /// with caller buffers.
    pub fn infer(&self, s: &G::State, x: &mut [f32], scratch: &mut Scratch) -> f32 {
        self.encoder.encode(s, x);
        self.layout
            .forward_batch(&self.params, &self.weights, x, 1, scratch);
        scratch.values[0]
    }

    /// The values (before the value head's squashing) and logits (|A| per position, in
    /// order) of a batch of decision states, evaluated as one batch: each position's outputs
    /// are the bits it gets alone (docs/network.md).
    pub fn infer_batch(&self, states: &[G::State], values: &mut Vec<f32>, logits: &mut Vec<f32>) {
        let mut scratch = self.layout.scratch();
        self.forward_states(states.iter(), &mut scratch);
        let n = states.len();
        values.clear();
        values.extend_from_slice(&scratch.values[..n]);
        logits.clear();
        logits.extend_from_slice(&scratch.logits[..n * self.layout.actions()]);
    }

    /// Encodes `states` into the scratch's batch and runs the forward pass over them.
    fn forward_states<'s>(
        &self,
        states: impl ExactSizeIterator<Item = &'s G::State>,
        scratch: &mut Scratch,
    ) where
        G::State: 's,
    {
        let n = states.len();
        let len = self.layout.input().len();
        scratch.ensure(n);
        let mut x = std::mem::take(&mut scratch.x);
        for (row, s) in x.chunks_exact_mut(len).zip(states) {
            self.encoder.encode(s, row);
        }
        self.layout
            .forward_batch(&self.params, &self.weights, &x, n, scratch);
        scratch.x = x;
    }

    /// A leaf evaluator with buffers of its own.
    pub fn eval(&self) -> NetEval<'_, G> {
        NetEval {
            net: self,
            x: vec![0.0; self.layout.input().len()],
            scratch: self.layout.scratch(),
        }
    }
}

/// The network as the search's leaf evaluator: priors the softmax of the legal logits,
/// value the value head's on the [0, 1] scale for the side to move.
pub struct NetEval<'a, G: Game> {
    net: &'a Network<G>,
    x: Vec<f32>,
    scratch: Scratch,
}

impl<G: Abilities> NetEval<'_, G> {
    /// The greedy move: the legal action of highest logit, ties to the lowest action.
    pub fn greedy(&mut self, s: &G::State, legal: &[Action]) -> Action {
        self.greedy_value(s, legal).0
    }

    /// The greedy move and the value on the [0, 1] scale, from one forward pass.
    pub(crate) fn greedy_value(&mut self, s: &G::State, legal: &[Action]) -> (Action, f64) {
        let pre = self.net.infer(s, &mut self.x, &mut self.scratch);
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

impl<G: Abilities> Learner<G> for Network<G> {
    const NAME: &'static str = "network";
    const METRICS: &'static [MetricDef] = NETWORK_METRICS;
    const SELF_PLAY_LANES: usize = SELF_PLAY_LANES;

    type Sample = NetSample;
    type Eval<'a> = NetEval<'a, G>;
    type Evaluation = NetworkEvaluation;

    fn validate(check: SettingsCheck<'_>) -> Result<(), SettingError> {
        let n = settings_of(check.learner);
        n.validate(check)?;
        if n.augment == AugmentKind::Mirror && G::ABILITIES.mirror.is_none() {
            return Err(bad(
                "augment",
                "mirror",
                &format!(
                    "\"none\" for {}: the game has no mirror image ({} one)",
                    game_name::<G>(),
                    crate::games::families_with_text(crate::games::Ability::Mirror)
                ),
            ));
        }
        let greedy = n.reference.as_ref().map_or(0, |r| r.greedy_games);
        if greedy > 0 && G::ABILITIES.greedy_features.is_none() {
            return Err(SettingError::new(
                "learner.network.reference.greedy_games",
                greedy,
                format!(
                    "0 for {}: the game has no greedy player ({} one)",
                    game_name::<G>(),
                    crate::games::families_with_text(crate::games::Ability::Greedy)
                ),
            ));
        }
        Ok(())
    }

    fn new(g: &G, ctx: LearnerContext<'_>) -> Result<Self, LearnerError> {
        Network::build(g, ctx)
    }

    fn stored(store: &Store, root: &ObjectHash) -> Result<bool, LearnerError> {
        // Every network checkpoint is full: stored whole, never derived.
        let c: CheckpointRecord = store.get(root)?;
        Ok(store.contains(&c.params)? && store.contains(&c.optimizer)?)
    }

    fn restore(
        g: &G,
        ctx: LearnerContext<'_>,
        store: &Store,
        root: Option<&ObjectHash>,
    ) -> Result<Self, LearnerError> {
        let mut net = Network::build(g, ctx)?;
        let Some(root) = root else {
            return Ok(net);
        };
        let c: CheckpointRecord = store.get(root)?;
        let params: ParamsRecord = store.get(&c.params)?;
        let opt: OptimizerRecord = store.get(&c.optimizer)?;
        let n = net.layout.params();
        if params.values.len() != n || !opt.state.fits(&net.optim, n) {
            return Err(LearnerError::Usage(format!(
                "network checkpoint {root}: {} parameters and an optimiser state that do not \
                 fit the run's network of {n} parameters",
                params.values.len()
            )));
        }
        net.params = params.values;
        net.weights = net.layout.weights(&net.params);
        net.opt = opt.state;
        net.losses = Losses {
            policy: c.loss_policy,
            value: c.loss_value,
        };
        net.buffer = c.buffer;
        if net.settings.gate.is_some() {
            // M* as stored; a checkpoint from before gating was on starts it at the model.
            let mut best = net.copy();
            if let Some(h) = &c.best {
                let p: ParamsRecord = store.get(h)?;
                if p.values.len() != n {
                    return Err(LearnerError::Usage(format!(
                        "network checkpoint {root}: M* has {} parameters, the run's network {n}",
                        p.values.len()
                    )));
                }
                best.params = p.values;
                best.weights = best.layout.weights(&best.params);
            }
            net.best = Some(Box::new(best));
        }
        Ok(net)
    }

    fn references(store: &Store, root: &ObjectHash) -> Result<CheckpointRefs, LearnerError> {
        // A network checkpoint root names its weights and optimiser state (docs/network.md).
        let c: CheckpointRecord = store.get(root)?;
        let best = c.best.map(|h| ("best", h));
        let references = [("params", c.params), ("optimizer", c.optimizer)]
            .into_iter()
            .chain(best)
            .map(|(what, hash)| Reference {
                what: what.into(),
                hash,
                stored: true,
            })
            .collect();
        Ok(CheckpointRefs {
            kind: "network checkpoint",
            iteration: c.iteration,
            references,
        })
    }

    fn summary(
        &self,
        g: &G,
        ctx: LearnerContext<'_>,
        iteration: u32,
        with_rows: bool,
    ) -> Result<ModelSummary, LearnerError> {
        if with_rows {
            return Err(LearnerError::Usage(
                "checkout --export PATH writes a table's rows where PATH ends in anything but \
                 .onnx or .safetensors; the network learner has no rows: export it as \
                 PATH.onnx (graph and weights, opset 13) or PATH.safetensors (the weights)"
                    .into(),
            ));
        }
        // Every network checkpoint is full, so checkpointing again gives the stored root.
        let c = Learner::checkpoint(self, g, ctx, iteration, None)?;
        Ok(ModelSummary {
            identity: c.root,
            units: self.parameters() as u64,
            unit: "parameters",
            bytes: c.bytes,
            num_actions: g.num_actions(),
            rows: Vec::new(),
        })
    }

    fn evaluator(&self) -> NetEval<'_, G> {
        self.playing().eval()
    }

    fn greedy_action(&self, _: &G, s: &G::State, legal: &[Action]) -> Action {
        self.playing().eval().greedy(s, legal)
    }

    fn samples(
        g: &G,
        ctx: LearnerContext<'_>,
        record: &GameRecord,
        states: &[G::State],
        out: &mut Vec<NetSample>,
    ) -> Result<(), ReplayError> {
        let Some(enc) = g.encoder() else {
            return Ok(());
        };
        let (retain, augment, skip_draws) = ctx
            .learner
            .network
            .as_ref()
            .map_or((1.0, AugmentKind::None, false), |n| {
                (n.retain, n.augment, n.skip_draws)
            });
        if skip_draws && record.end == GameEnd::Finished(GameResult::Draw) {
            return Ok(());
        }
        let mirror = g.mirror().filter(|_| augment == AugmentKind::Mirror);
        // Which samples are kept: one uniform draw per sample, in order, from a stream named
        // by the record's own seed and stream, so the kept set is a function of the record.
        let mut keep = (retain < 1.0).then(|| {
            stream_fmt(
                record.seed,
                format_args!("network-retain({})", record.stream),
            )
        });
        let mut first = true;
        let mut push = |s: &G::State, legal: Vec<Action>, target: Vec<f32>, z: f64| {
            let mut x = vec![0.0; enc.planes().len()];
            enc.encode(s, &mut x);
            out.push(NetSample {
                example: Example {
                    x,
                    legal,
                    target,
                    z: z as f32,
                },
                first,
            });
            first = false;
        };
        super::searched_decisions(g, record, states, |s, legal, counts, z| {
            if let Some(rng) = keep.as_mut()
                && rng.random::<f64>() >= retain
            {
                return;
            }
            let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
            let target: Vec<f32> = counts
                .iter()
                .map(|&c| (f64::from(c) / total.max(1) as f64) as f32)
                .collect();
            if let Some(m) = mirror {
                // The image: its legal actions are the images of `legal`, ascending, each
                // with its preimage's target; the side to move, so z, is the same.
                let mut image: Vec<(Action, f32)> = legal
                    .iter()
                    .zip(&target)
                    .map(|(&a, &t)| ((m.action)(g, s, a), t))
                    .collect();
                image.sort_unstable_by_key(|x| x.0);
                let ms = (m.state)(g, s);
                push(s, legal.to_vec(), target, z);
                push(
                    &ms,
                    image.iter().map(|x| x.0).collect(),
                    image.iter().map(|x| x.1).collect(),
                    z,
                );
            } else {
                push(s, legal.to_vec(), target, z);
            }
        });
        Ok(())
    }

    fn train(
        &mut self,
        ctx: LearnerContext<'_>,
        iteration: u32,
        window: &[&NetSample],
    ) -> TrainReport {
        let lr = self.settings.lr_at(iteration);
        let limit = self
            .settings
            .replay_games
            .map_or(usize::MAX, |r| r as usize);
        let (mut games, mut start) = (0usize, window.len());
        while start > 0 && games < limit {
            start -= 1;
            games += usize::from(window[start].first);
        }
        let buffer: Vec<&Example> = window[start..].iter().map(|s| &s.example).collect();
        self.buffer = buffer.len() as u64;
        if let Some(epochs) = self.settings.train_epochs {
            let report = self.train_epochs(ctx, iteration, lr, epochs, &buffer);
            self.gate(ctx, iteration);
            return report;
        }
        let steps = if buffer.is_empty() {
            0
        } else {
            self.settings.train_steps
        };
        let mut rng = stream_fmt(ctx.model_seed, format_args!("network-train({iteration})"));
        let b = self.settings.batch_size as usize;
        let mut batch = vec![0usize; b];
        let mut trainer = Trainer::new(&self.layout);
        for _ in 0..steps {
            for x in batch.iter_mut() {
                *x = uniform_index(&mut rng, buffer.len());
            }
            self.losses = train_step(
                &self.layout,
                &mut self.params,
                &mut self.opt,
                &self.optim,
                lr,
                &buffer,
                &batch,
                &mut trainer,
            );
        }
        if steps > 0 {
            self.weights = self.layout.weights(&self.params);
        }
        self.gate(ctx, iteration);
        TrainReport {
            samples: u64::from(steps) * b as u64,
            units: self.buffer,
            beta: lr,
        }
    }

    fn checkpoint(
        &self,
        _: &G,
        _: LearnerContext<'_>,
        iteration: u32,
        _: Option<ObjectHash>,
    ) -> Result<Checkpoint, LearnerError> {
        let params = Encoded::of(&ParamsRecord {
            values: self.params.clone(),
        })?;
        let optimizer = Encoded::of(&OptimizerRecord {
            state: self.opt.clone(),
        })?;
        // M* equal to the trained model (just promoted) is the same object: named, not
        // encoded again.
        let best = match &self.best {
            Some(b) if b.params != self.params => Some(Encoded::of(&ParamsRecord {
                values: b.params.clone(),
            })?),
            _ => None,
        };
        let best_hash = (self.best.as_ref()).map(|_| best.as_ref().map_or(params.hash, |b| b.hash));
        let root = Encoded::of(&CheckpointRecord {
            iteration,
            parameters: self.params.len() as u64,
            params: params.hash,
            optimizer: optimizer.hash,
            loss_policy: self.losses.policy,
            loss_value: self.losses.value,
            buffer: self.buffer,
            best: best_hash,
        })?;
        let root_hash = root.hash;
        let mut objects = vec![params, optimizer];
        objects.extend(best);
        objects.push(root);
        let bytes = objects.iter().map(|o| o.bytes.len() as u64).sum();
        Ok(Checkpoint {
            root: root_hash,
            objects,
            full: true,
            bytes,
        })
    }

    fn evaluate(&self, g: &G, ctx: LearnerContext<'_>, e: EvalContext<'_, G>) -> NetworkEvaluation {
        let mut out = NetworkEvaluation {
            iteration: e.iteration,
            wr_p: None,
            err_p: None,
            mae_v: None,
            seen: e.seen,
            loss_policy: self.losses.policy,
            loss_value: self.losses.value,
            buffer: self.buffer,
            reference: None,
            gate: self.gate,
        };
        // The model that plays (M* under gating) is the one measured.
        let net = self.playing();
        let reference = self.settings.reference.clone().unwrap_or_default();
        let mut ev = net.eval();
        let c4 = c4_scores(g, &reference, |s, legal| ev.greedy_value(s, legal));
        let Some(truth) = e.truth else {
            // An unsolved variant: the reference metrics.
            let solver = solver_scores(
                g,
                &reference,
                ctx.search,
                ctx.model_seed,
                e.iteration,
                e.previous,
                || net.eval(),
            );
            let c4_search = c4_search_scores(
                g,
                &reference,
                ctx.search,
                ctx.model_seed,
                e.iteration,
                || net.eval(),
            );
            let greedy = greedy_scores(
                g,
                &reference,
                ctx.search,
                ctx.model_seed,
                e.iteration,
                || net.eval(),
            );
            if !solver.is_empty() || c4.is_some() || !c4_search.is_empty() || greedy.is_some() {
                out.reference = Some(ReferenceEval {
                    solver,
                    c4: c4.unwrap_or_default(),
                    c4_search,
                    greedy,
                });
            }
            return out;
        };
        if e.plan.wr_p_games > 0 {
            out.wr_p = Some(win_rate_of(
                g,
                truth,
                ctx.model_seed,
                e.iteration,
                e.plan.wr_p_games,
                || net.eval(),
                |ev, s, legal| ev.greedy(s, legal),
            ));
        }
        if e.plan.errors {
            let mut ev = net.eval();
            let (err, mae) =
                truth.test_errors(g, |s, legal, priors| ev.priors_value(s, legal, priors));
            out.err_p = Some(err);
            out.mae_v = Some(mae);
        }
        // On a solved variant too, the games against the greedy player when asked for (Liu et
        // al.'s measure beside the exact ones); the other reference metrics stand in for an
        // exact truth, so they are not played here. Off (0 games) nothing changes.
        let greedy = greedy_scores(
            g,
            &reference,
            ctx.search,
            ctx.model_seed,
            e.iteration,
            || net.eval(),
        );
        if greedy.is_some() {
            out.reference = Some(ReferenceEval {
                greedy,
                ..ReferenceEval::default()
            });
        }
        out
    }

    fn metric_values(e: &NetworkEvaluation) -> MetricValues {
        let w = e.wr_p.as_ref();
        let values = WinRate::values(w)
            .into_iter()
            .chain([
                e.err_p,
                e.mae_v,
                Some(e.seen as f64),
                Some(e.loss_policy),
                Some(e.loss_value),
                Some(e.buffer as f64),
            ])
            .chain(ReferenceEval::values(e.reference.as_ref()))
            .chain([
                e.gate.map(|g| g.score),
                e.gate.map(|g| f64::from(u8::from(g.promoted))),
            ]);
        NETWORK_METRICS
            .iter()
            .zip(values)
            .map(|(d, v)| (d.name, v))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::RunConfig;

    const BASE: &str = "variant = \"ewn:3x3x3\"\nseed = 1\niterations = 2\n\
                        games_per_iteration = 10\nwindow = 2\n[learner]\nkind = \"network\"\n";

    fn parse(extra: &str) -> Result<RunConfig, String> {
        RunConfig::from_toml(&format!("{BASE}{extra}"), "x").map_err(|e| e.to_string())
    }

    #[test]
    fn settings_default_to_the_2023_study_and_parse() {
        let c = parse("").unwrap();
        // A new run's kernels fuse each multiply and add; a record without the key (every
        // run stored before it) means separate ones.
        let fused = NetworkSettings {
            arithmetic: Some(ArithKind::Fused),
            ..NetworkSettings::default()
        };
        assert_eq!(settings_of(&c.settings.learner), fused);
        assert_eq!(fused.arith(), Arith::Fused);
        assert_eq!(NetworkSettings::default().arith(), Arith::Separate);
        let c = parse("[learner.network]\narithmetic = \"separate\"\n").unwrap();
        assert_eq!(settings_of(&c.settings.learner).arith(), Arith::Separate);
        let e = parse("[learner.network]\narithmetic = \"fma\"\n").unwrap_err();
        assert!(e.contains("arithmetic") && e.contains("fused"), "{e}");
        // The value head: tanh by default (left out of the record), sigmoid on request.
        assert_eq!(NetworkSettings::default().value_head, ValueHeadKind::Tanh);
        let c = parse("[learner.network]\nvalue_head = \"sigmoid\"\n").unwrap();
        let n = settings_of(&c.settings.learner);
        assert_eq!(n.value_head.head(), ValueHead::Sigmoid);
        let json = serde_json::to_value(&n).unwrap();
        assert_eq!(json["value_head"], "sigmoid");
        let json = serde_json::to_value(NetworkSettings::default()).unwrap();
        assert!(json.get("value_head").is_none(), "{json}");
        let e = parse("[learner.network]\nvalue_head = \"relu\"\n").unwrap_err();
        assert!(e.contains("value_head") && e.contains("sigmoid"), "{e}");
        let c = parse(
            "[learner.network]\narch = \"resnet\"\nblocks = 3\nchannels = 8\n\
             optimizer = \"adam\"\nlr = [[1, 0.1], [2, 0.01]]\nreplay_games = 20\n",
        )
        .unwrap();
        let n = settings_of(&c.settings.learner);
        assert_eq!((n.arch, n.blocks, n.channels), (ArchKind::ResNet, 3, 8));
        assert_eq!((n.lr_at(1), n.lr_at(2), n.lr_at(9)), (0.1, 0.01, 0.01));
        // Tabular runs' settings do not name the network (their hashes do not move).
        let t = RunConfig::from_toml("variant = \"ewn:3x3x3\"\niterations = 1\n", "x").unwrap();
        let json = serde_json::to_string(&t.settings).unwrap();
        assert!(!json.contains("network"), "{json}");
    }

    /// The example spec is a tiny MLP on EWN 3x3x3 (docs/network.md).
    /// The literature spec of Liu et al.'s pipeline (`runs/checkers-liu.toml`) is valid, and
    /// its network's size is what docs/checkers.md reports.
    #[test]
    fn the_liu_spec_parses_and_its_network_has_the_reported_size() {
        let text = include_str!("../../runs/checkers-liu.toml");
        let cfg = RunConfig::from_toml(text, "t").unwrap();
        assert_eq!(cfg.iterations, 200);
        let crate::games::AnyGame::Checkers(g) = &cfg.game else {
            panic!("{:?}", cfg.game)
        };
        let net = Network::build(g, cfg.learner_context(1)).unwrap();
        assert_eq!(net.parameters(), 168_767);
    }

    #[test]
    fn the_tiny_spec_parses() {
        let c = RunConfig::from_toml(include_str!("../../runs/network-tiny.toml"), "x").unwrap();
        assert_eq!(c.game.variant(), "ewn:3x3x3");
        let n = settings_of(&c.settings.learner);
        assert_eq!((n.arch, n.hidden.clone()), (ArchKind::Mlp, vec![32]));
    }

    const CHECKERS: &str = "variant = \"checkers:5x5-3\"\nseed = 1\niterations = 2\n\
                            games_per_iteration = 10\nwindow = 2\neval.wr_p = false\n\
                            eval.errors = false\n[learner]\nkind = \"network\"\n";

    fn checkers_config(extra: &str) -> RunConfig {
        RunConfig::from_toml(&format!("{CHECKERS}[learner.network]\n{extra}\n"), "x").unwrap()
    }

    /// A game of `g` as a self-play record: every move "searched", one visit on the move
    /// played (as the greedy mover's records), ending as the rules end it.
    fn random_record(g: &crate::games::Checkers, i: u32) -> GameRecord {
        use crate::game::Turn;
        use crate::game_record::{SearchStats, Step};

        let mut rng = stream_fmt(11, format_args!("record({i})"));
        let (mut s, mut legal, mut steps) = (g.initial_state(), Vec::new(), Vec::new());
        let mut features = Vec::new();
        let result = loop {
            match g.turn(&s) {
                Turn::Terminal(r) => break r,
                Turn::Player(_) => {
                    g.legal_actions(&s, &mut legal);
                    // In even games mostly the greedy move of largest forward gain (they
                    // end), else a uniform one (odd games run into the move limit).
                    g.greedy_features(&s, &legal, &mut features);
                    let k = if i.is_multiple_of(2) && rng.random::<f64>() < 0.7 {
                        (0..legal.len()).max_by_key(|&k| features[k].0).unwrap()
                    } else {
                        uniform_index(&mut rng, legal.len())
                    };
                    let mut visits = vec![0; legal.len()];
                    visits[k] = 1;
                    steps.push(Step::Move {
                        action: legal[k],
                        search: Some(SearchStats {
                            visits,
                            target: None,
                            full: true,
                        }),
                    });
                    s = g.apply(&s, legal[k]);
                }
                Turn::Chance => unreachable!("Chinese Checkers has no chance"),
            }
        };
        GameRecord {
            variant: g.variant(),
            seed: 5,
            stream: format!("self-play(1,{i})"),
            players: ["self-play".into(), "self-play".into()],
            start: None,
            steps,
            end: GameEnd::Finished(result),
        }
    }

    type Net = Network<crate::games::Checkers>;

    fn samples_of(c: &RunConfig, g: &crate::games::Checkers, r: &GameRecord) -> Vec<NetSample> {
        let mut out = Vec::new();
        let states = r.states(g).unwrap();
        <Net as Learner<_>>::samples(g, c.learner_context(1), r, &states, &mut out).unwrap();
        out
    }

    /// A sample's bits: planes, legal actions, target, outcome, whether first.
    type SampleBits = (Vec<u32>, Vec<u16>, Vec<u32>, u32, bool);

    fn bits(v: &[NetSample]) -> Vec<SampleBits> {
        v.iter()
            .map(|s| {
                let e = &s.example;
                (
                    e.x.iter().map(|x| x.to_bits()).collect(),
                    e.legal.clone(),
                    e.target.iter().map(|x| x.to_bits()).collect(),
                    e.z.to_bits(),
                    s.first,
                )
            })
            .collect()
    }

    fn checkers() -> crate::games::Checkers {
        match "checkers:5x5-3,max_plies=60".parse().unwrap() {
            crate::games::AnyGame::Checkers(g) => g,
            _ => unreachable!(),
        }
    }

    /// `retain = F`: a sample is kept by a draw from the record's own stream, so the kept set
    /// is the same every time; F = 1 keeps every sample; over many samples the kept fraction
    /// is near F; the first kept sample of a game is marked first.
    #[test]
    fn retained_samples_are_a_function_of_the_record() {
        let g = checkers();
        let all_cfg = checkers_config("");
        let cfg = checkers_config("retain = 0.25");
        let half = checkers_config("retain = 0.5");
        let (mut total, mut kept) = (0usize, 0usize);
        for i in 0..60 {
            let r = random_record(&g, i);
            let all = samples_of(&all_cfg, &g, &r);
            assert_eq!(all.len(), r.steps.len());
            let some = samples_of(&cfg, &g, &r);
            assert_eq!(bits(&some), bits(&samples_of(&cfg, &g, &r)), "game {i}");
            // A smaller fraction keeps a subset of a larger one's samples (same draws).
            let more: Vec<_> = bits(&samples_of(&half, &g, &r))
                .into_iter()
                .map(|b| (b.0, b.1, b.2, b.3))
                .collect();
            for b in bits(&some) {
                assert!(more.contains(&(b.0, b.1, b.2, b.3)), "game {i}");
            }
            // The kept samples are a subsequence of all, the first of them marked first.
            let all_bits = bits(&all);
            let mut at = 0;
            for (k, b) in bits(&some).into_iter().enumerate() {
                let (x, legal, target, z, first) = b;
                assert_eq!(first, k == 0);
                let pos = all_bits[at..]
                    .iter()
                    .position(|a| (&a.0, &a.1, &a.2, a.3) == (&x, &legal, &target, z))
                    .expect("a kept sample is one of the game's samples");
                at += pos + 1;
            }
            total += all.len();
            kept += some.len();
        }
        let f = kept as f64 / total as f64;
        assert!(total > 2000 && (0.2..0.3).contains(&f), "{kept} of {total}");
    }

    /// `augment = "mirror"`: each kept sample is followed by its image: the planes of the
    /// mirrored state (each plane reflected), its legal actions ascending with their
    /// preimages' targets, the same outcome.
    #[test]
    fn mirror_augmentation_adds_each_samples_image() {
        let g = checkers();
        let plain = checkers_config("");
        let cfg = checkers_config("augment = \"mirror\"\nretain = 0.5");
        let half = checkers_config("retain = 0.5");
        let m = g.mirror().unwrap();
        let n = g.side();
        for i in 0..5 {
            let r = random_record(&g, i);
            let kept = samples_of(&half, &g, &r);
            let both = samples_of(&cfg, &g, &r);
            assert_eq!(both.len(), 2 * kept.len());
            assert!(samples_of(&plain, &g, &r).len() > kept.len());
            for (k, pair) in both.chunks(2).enumerate() {
                let (a, b) = (&pair[0].example, &pair[1].example);
                assert_eq!(bits(&[pair[0].clone()]), bits(&[kept[k].clone()]));
                assert!(!pair[1].first);
                assert_eq!(a.z, b.z);
                assert!(b.legal.is_sorted());
                // Planes: square (r, c) of the image is square (n-1-c, n-1-r) of the sample.
                for ch in 0..3 {
                    for r in 0..n {
                        for c in 0..n {
                            let at = |r: usize, c: usize| ch * n * n + r * n + c;
                            assert_eq!(b.x[at(n - 1 - c, n - 1 - r)], a.x[at(r, c)]);
                        }
                    }
                }
                let nn = (n * n) as u16;
                // (Chinese Checkers' action image does not depend on the state.)
                for (&act, &t) in a.legal.iter().zip(&a.target) {
                    let j = b
                        .legal
                        .binary_search(&(m.action)(&g, &g.initial_state(), act));
                    assert_eq!(b.target[j.unwrap()], t);
                    assert_eq!(act / nn, b.legal[j.unwrap()] / nn, "same checker");
                }
            }
        }
        // Refused on a game without a mirror image, naming the game.
        let e = parse("[learner.network]\naugment = \"mirror\"\n").unwrap_err();
        assert!(
            e.contains("learner.network.augment") && e.contains("Ewn"),
            "{e}"
        );
        assert_eq!(game_name::<crate::games::Go9>(), "Go");
        let e = parse("[learner.network]\naugment = \"rotate\"\n").unwrap_err();
        assert!(e.contains("augment") && e.contains("mirror"), "{e}");
    }

    /// `skip_draws`: a drawn game gives no samples; a decided one all of them.
    #[test]
    fn drawn_games_can_be_skipped() {
        let g = checkers();
        let skip = checkers_config("skip_draws = true");
        let keep = checkers_config("");
        let (mut draws, mut wins) = (0, 0);
        for i in 0..40 {
            let r = random_record(&g, i);
            let n = samples_of(&skip, &g, &r).len();
            if r.end.result() == GameResult::Draw {
                draws += 1;
                assert_eq!(n, 0);
                assert!(!samples_of(&keep, &g, &r).is_empty());
            } else {
                wins += 1;
                assert_eq!(n, r.steps.len());
            }
        }
        assert!(draws > 0 && wins > 0, "{draws} draws, {wins} wins");
    }

    /// `train_epochs = E`: E passes over the buffer, each sample once a pass; the same bits
    /// twice; another iteration's permutation gives other weights. Both keys at once are
    /// refused, naming both.
    #[test]
    fn training_passes_are_deterministic() {
        let g = checkers();
        let cfg = checkers_config("train_epochs = 2\nbatch_size = 7\nhidden = [8]");
        let window: Vec<NetSample> = (0..3)
            .flat_map(|i| samples_of(&cfg, &g, &random_record(&g, i)))
            .collect();
        let refs: Vec<&NetSample> = window.iter().collect();
        let train = |iteration: u32| {
            let mut net = <Net as Learner<_>>::new(&g, cfg.learner_context(4)).unwrap();
            let r = net.train(cfg.learner_context(4), iteration, &refs);
            (
                r.samples,
                net.params.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            )
        };
        let (samples, a) = train(1);
        assert_eq!(samples, 2 * window.len() as u64);
        assert_eq!(train(1).1, a);
        assert_ne!(train(2).1, a);
        let untrained = <Net as Learner<_>>::new(&g, cfg.learner_context(4)).unwrap();
        assert_ne!(
            untrained
                .params
                .iter()
                .map(|x| x.to_bits())
                .collect::<Vec<_>>(),
            a
        );
        let e = RunConfig::from_toml(
            &format!("{CHECKERS}[learner.network]\ntrain_epochs = 2\ntrain_steps = 10\n"),
            "x",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("train_steps") && e.contains("train_epochs"),
            "{e}"
        );
    }

    /// The new keys are left out of the settings record at their defaults (earlier runs
    /// keep their hashes) and written when set.
    #[test]
    fn data_settings_are_left_out_at_their_defaults() {
        let json = serde_json::to_value(NetworkSettings::default()).unwrap();
        for key in ["retain", "augment", "skip_draws", "train_epochs"] {
            assert!(json.get(key).is_none(), "{key}: {json}");
        }
        let c = checkers_config(
            "retain = 0.04\naugment = \"mirror\"\nskip_draws = true\ntrain_epochs = 2",
        );
        let json = serde_json::to_value(settings_of(&c.settings.learner)).unwrap();
        assert_eq!(json["retain"], 0.04);
        assert_eq!(json["augment"], "mirror");
        assert_eq!(json["skip_draws"], true);
        assert_eq!(json["train_epochs"], 2);
    }

    #[test]
    fn bad_settings_name_the_key() {
        let cases = [
            ("arch = \"transformer\"", "arch"),
            ("hidden = [0]", "learner.network.hidden"),
            ("channels = 0", "learner.network.channels"),
            ("bottleneck = 9999", "learner.network.bottleneck"),
            ("value_hidden = 8", "learner.network.value_hidden"),
            ("batch_norm = true", "learner.network.batch_norm"),
            ("blocks = 99", "learner.network.blocks"),
            ("optimizer = \"lbfgs\"", "optimizer"),
            ("lr = []", "learner.network.lr"),
            ("lr = [[2, 0.1]]", "learner.network.lr"),
            ("lr = [[1, 0.1], [1, 0.01]]", "learner.network.lr[1]"),
            ("lr = [[1, -0.1]]", "learner.network.lr[0]"),
            ("momentum = 1.0", "learner.network.momentum"),
            ("adam_beta2 = -0.5", "learner.network.adam_beta2"),
            ("adam_eps = 0.0", "learner.network.adam_eps"),
            ("adam_eps = 5e-324", "learner.network.adam_eps"),
            ("lr = [[1, 1e300]]", "learner.network.lr[0]"),
            ("weight_decay = 1e300", "learner.network.weight_decay"),
            ("weight_decay = -1.0", "learner.network.weight_decay"),
            ("batch_size = 0", "learner.network.batch_size"),
            ("train_steps = 2000000", "learner.network.train_steps"),
            ("train_epochs = 0", "learner.network.train_epochs"),
            ("train_epochs = 1001", "learner.network.train_epochs"),
            ("retain = 0.0", "learner.network.retain"),
            ("retain = 1.5", "learner.network.retain"),
            ("retain = nan", "learner.network.retain"),
            ("replay_games = 0", "learner.network.replay_games"),
            ("replay_games = 21", "learner.network.replay_games"),
            ("bogus = 1", "bogus"),
        ];
        for (line, key) in cases {
            let e = parse(&format!("[learner.network]\n{line}\n")).unwrap_err();
            assert!(e.contains(key), "{line}: {e}");
        }
        let e = RunConfig::from_toml(
            "variant = \"ewn:3x3x3\"\niterations = 1\n[learner.network]\nhidden = [4]\n",
            "x",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("learner.network") && e.contains("kind"), "{e}");
    }

    /// An evaluation without reference metrics has the bytes of the layout before them (the
    /// heads of earlier runs stay), and both kinds read back as written.
    #[test]
    fn evaluations_without_reference_metrics_keep_their_bytes() {
        let e = NetworkEvaluation {
            iteration: 3,
            wr_p: None,
            err_p: Some(0.1),
            mae_v: Some(0.2),
            seen: 9,
            loss_policy: 1.5,
            loss_value: 0.25,
            buffer: 7,
            reference: None,
            gate: None,
        };
        // The layout before them: the eight fields one after another (postcard writes a
        // struct as a tuple).
        let before = postcard::to_stdvec(&(
            3u32,
            None::<WinRate>,
            Some(0.1f64),
            Some(0.2f64),
            9u64,
            1.5f64,
            0.25f64,
            7u64,
        ))
        .unwrap();
        assert_eq!(postcard::to_stdvec(&e).unwrap(), before);
        assert_eq!(
            postcard::from_bytes::<NetworkEvaluation>(&before).unwrap(),
            e
        );
        let with = NetworkEvaluation {
            reference: Some(ReferenceEval {
                solver: vec![crate::eval::reference::SolverScore {
                    multiplier: 10,
                    games: 4,
                    wins: 1,
                    draws: 1,
                    score: 0.375,
                    ci95: 0.4,
                    auc: Some(1.0),
                }],
                c4: vec![crate::eval::reference::C4SetScore {
                    set: "L3_R1".into(),
                    positions: 10,
                    value_error: 0.3,
                    best_moves: 7,
                }],
                c4_search: Vec::new(),
                greedy: None,
            }),
            ..e.clone()
        };
        let bytes = postcard::to_stdvec(&with).unwrap();
        assert!(bytes.len() > before.len());
        assert_eq!(
            postcard::from_bytes::<NetworkEvaluation>(&bytes).unwrap(),
            with
        );
        // Without the search player's scores, the reference metrics keep the bytes of their
        // first layout (two fields, no third), so earlier heads stay.
        let r = with.reference.as_ref().unwrap();
        let first_layout = postcard::to_stdvec(&(
            3u32,
            None::<WinRate>,
            Some(0.1f64),
            Some(0.2f64),
            9u64,
            1.5f64,
            0.25f64,
            7u64,
            (&r.solver, &r.c4),
        ))
        .unwrap();
        assert_eq!(bytes, first_layout);
        // With them: a third field, read back as written.
        let mut searched = with.clone();
        if let Some(r) = searched.reference.as_mut() {
            r.c4_search = vec![crate::eval::reference::C4SearchScore {
                set: "L3_R1".into(),
                positions: 10,
                best_moves: 9,
            }];
        }
        let more = postcard::to_stdvec(&searched).unwrap();
        assert!(more.starts_with(&bytes) && more.len() > bytes.len());
        assert_eq!(
            postcard::from_bytes::<NetworkEvaluation>(&more).unwrap(),
            searched
        );
        let values = <Network<crate::games::Ewn> as Learner<_>>::metric_values(&searched);
        assert_eq!(
            crate::eval::metric(&values, "c4_search_best_move_l3_r1"),
            Some(0.9)
        );
        assert_eq!(
            crate::eval::metric(&values, "c4_search_best_move"),
            Some(0.9)
        );
        let values = <Network<crate::games::Ewn> as Learner<_>>::metric_values(&with);
        assert_eq!(values.len(), NETWORK_METRICS.len());
        assert_eq!(crate::eval::metric(&values, "wr_solver_10x"), Some(0.375));
        assert_eq!(
            crate::eval::metric(&values, "c4_best_move_l3_r1"),
            Some(0.7)
        );
        assert_eq!(crate::eval::metric(&values, "wr_solver_1x"), None);
    }

    /// A network on a real game: a position's priors and value are the same bits through the
    /// evaluator alone and after any other positions (the search's batch of one and the
    /// evaluation's loops agree).
    #[test]
    fn a_positions_output_does_not_depend_on_what_came_before() {
        let g = crate::games::Ewn::new(3, 3, 3).unwrap();
        let c = parse("[learner.network]\narch = \"resnet\"\nblocks = 1\nchannels = 4\n").unwrap();
        let ctx = c.learner_context(9);
        let net = <Network<crate::games::Ewn> as Learner<_>>::new(&g, ctx).unwrap();
        let states = g.test_positions();
        let mut legal = Vec::new();
        let alone: Vec<(Vec<u64>, u64)> = states
            .iter()
            .map(|s| {
                g.legal_actions(s, &mut legal);
                let mut p = vec![0.0; legal.len()];
                let v = net.eval().priors_value(s, &legal, &mut p);
                (p.iter().map(|x| x.to_bits()).collect(), v.to_bits())
            })
            .collect();
        let mut ev = net.eval();
        for (s, want) in states.iter().zip(&alone).rev() {
            g.legal_actions(s, &mut legal);
            let mut p = vec![0.0; legal.len()];
            let v = ev.priors_value(s, &legal, &mut p);
            assert_eq!(
                &(
                    p.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    v.to_bits()
                ),
                want
            );
        }
    }
}
