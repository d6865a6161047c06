//! `[learner.network]`: the network learner's settings, their checks and the keys a branch
//! cannot change.

use serde::{Deserialize, Serialize};

use crate::error::SettingError;
use crate::eval::reference::ReferenceSettings;
use crate::learners::gate::GateSettings;
use crate::learners::{LearnerSettings, SettingsCheck};
use crate::nn::{Arch, Arith, Head, OptimConfig, ResNet, Stem, ValueHead};

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

/// The residual net's stem in the spec (`nn::Stem`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum StemKind {
    /// A 3x3 convolution with zero padding: the trunk keeps the board's size.
    #[default]
    #[serde(rename = "same")]
    Same,
    /// An unpadded 3x3 convolution: the trunk runs on the (h - 2) x (w - 2) interior (Liu
    /// et al.'s net: 7 x 7 planes, a 5 x 5 trunk).
    #[serde(rename = "valid")]
    Valid,
}

fn is_same_stem(x: &StemKind) -> bool {
    *x == StemKind::Same
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
    pub(super) fn head(self) -> ValueHead {
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
pub(super) const DEFAULT_TRAIN_STEPS: u32 = 100;

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
    /// ResNet: batch normalisation after every convolution (no convolution biases unless
    /// `conv_bias`).
    #[serde(skip_serializing_if = "is_false")]
    pub batch_norm: bool,
    /// ResNet with batch normalisation: the convolutions keep their biases (Liu et al.'s
    /// released model). Left out of the record at its default, as the keys above.
    #[serde(skip_serializing_if = "is_false")]
    pub conv_bias: bool,
    /// ResNet: `same` (a zero-padded 3x3 stem) or `valid` (unpadded: the trunk and heads run
    /// on the (h - 2) x (w - 2) interior, Liu et al.'s). Left out of the record at its
    /// default.
    #[serde(skip_serializing_if = "is_same_stem")]
    pub stem: StemKind,
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
    /// The network's input by name (docs/network.md, "Inputs"): absent, the game's default
    /// `position` planes; `liu` on Chinese Checkers, Liu et al.'s ID matrices of the last
    /// three states. Left out of the record when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
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
            conv_bias: false,
            stem: StemKind::Same,
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
            input: None,
            reference: None,
            gate: None,
        }
    }
}

/// The game's type name (`Ewn`, `Checkers`, `Go`), for errors raised where only its type is
/// known.
pub(super) fn game_name<G>() -> &'static str {
    let full = std::any::type_name::<G>();
    let path = full.split('<').next().unwrap_or(full);
    path.rsplit("::").next().unwrap_or(path)
}

/// A range error naming `learner.network.KEY`.
pub(super) fn bad(key: &str, value: impl ToString, allowed: &str) -> SettingError {
    SettingError::new(format!("learner.network.{key}"), value, allowed)
}

/// The optimiser keys the network and MuZero learners share, checked alike.
pub(crate) struct OptimizerKeys<'a> {
    pub(crate) lr: &'a [(u32, f64)],
    pub(crate) momentum: f64,
    pub(crate) adam_beta1: f64,
    pub(crate) adam_beta2: f64,
    pub(crate) weight_decay: f64,
    pub(crate) adam_eps: f64,
}

impl OptimizerKeys<'_> {
    /// Checks the learning-rate schedule, momenta, weight decay and epsilon; `bad` names a
    /// key in its learner's table (`learner.network.KEY`, `learner.muzero.KEY`).
    pub(crate) fn check(
        &self,
        bad: &dyn Fn(&str, String, &str) -> SettingError,
    ) -> Result<(), SettingError> {
        let lr = self.lr;
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
                return Err(bad(key, x.to_string(), "a number in [0, 1)"));
            }
        }
        // Upper bounds keep the arithmetic finite (a larger step overflows f32 within one
        // update); what still diverges is caught by the driver as a NaN metric.
        if !(0.0..=1.0).contains(&self.weight_decay) {
            return Err(bad(
                "weight_decay",
                self.weight_decay.to_string(),
                "a number from 0 to 1 (the studies use 1e-4)",
            ));
        }
        if !(1e-20..=1.0).contains(&self.adam_eps) {
            return Err(bad(
                "adam_eps",
                self.adam_eps.to_string(),
                "a number from 1e-20 to 1 (default 1e-8; the engine computes in f32)",
            ));
        }
        Ok(())
    }
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
        self.validate_arch_keys()?;
        if self.conv_bias && !self.batch_norm {
            return Err(bad(
                "conv_bias",
                true,
                "set only with batch_norm = true (without batch normalisation every \
                 convolution has its bias already)",
            ));
        }
        Ok(())
    }

    /// Every key of the residual net is refused, not ignored, with `arch = "mlp"` (`blocks`,
    /// `channels` and the rest). A key the record always holds counts as set when it
    /// differs from its default (a spec that writes the default is the same spec).
    fn validate_arch_keys(&self) -> Result<(), SettingError> {
        let d = NetworkSettings::default();
        let set = |differs: bool, v: String| differs.then_some(v);
        let (unused, arch) = match self.arch {
            ArchKind::Mlp => (
                vec![
                    (
                        "blocks",
                        set(self.blocks != d.blocks, self.blocks.to_string()),
                    ),
                    (
                        "channels",
                        set(self.channels != d.channels, self.channels.to_string()),
                    ),
                    (
                        "bottleneck",
                        set(self.bottleneck != 0, self.bottleneck.to_string()),
                    ),
                    ("batch_norm", set(self.batch_norm, "true".into())),
                    ("conv_bias", set(self.conv_bias, "true".into())),
                    ("stem", set(self.stem != StemKind::Same, "set".into())),
                    ("head", set(self.head != HeadKind::Dense, "set".into())),
                ],
                "resnet",
            ),
            // `hidden` with a residual net is not refused: stored runs' settings hold it.
            ArchKind::ResNet => (vec![], "mlp"),
        };
        match unused.into_iter().find_map(|(k, v)| v.map(|v| (k, v))) {
            Some((key, v)) => Err(bad(key, v, &format!("only with arch = \"{arch}\""))),
            None => Ok(()),
        }
    }

    /// The optimiser: the learning-rate schedule, momenta, weight decay and epsilon.
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
                conv_bias: self.conv_bias,
                stem: match self.stem {
                    StemKind::Same => Stem::Same,
                    StemKind::Valid => Stem::Valid,
                },
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

/// The run's network input: `[learner.network] input`, the game's default when absent
/// (docs/network.md, "Inputs"); `Err` names the inputs the game has.
pub(crate) fn input_of<G: crate::games::Abilities>(
    g: &G,
    s: &LearnerSettings,
) -> Result<crate::nn::encode::Encoder<G>, String> {
    g.input(s.network.as_ref().and_then(|n| n.input.as_deref()))
}

/// Settings a branch cannot change ([`crate::learners::LearnerKind::fixed_settings`]): they decide the
/// shape of the weights or of the optimiser state the branch continues.
pub(crate) const FIXED_SETTINGS: &[(&str, &str)] = &[
    (
        "learner.network.input",
        "the weights the branch continues read this input",
    ),
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
        "learner.network.conv_bias",
        "the weights the branch continues have its shape",
    ),
    (
        "learner.network.stem",
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

#[cfg(test)]
mod stem_and_conv_bias {
    use super::*;
    use crate::runs::{RunConfig, settings_hash};

    const BASE: &str = "variant = \"ewn:3x3x3\"\nseed = 1\niterations = 2\n\
                        games_per_iteration = 10\nwindow = 2\n[learner]\nkind = \"network\"\n\
                        [learner.network]\n";

    fn parse(extra: &str) -> Result<RunConfig, String> {
        RunConfig::from_toml(&format!("{BASE}{extra}"), "x").map_err(|e| e.to_string())
    }

    /// `stem` and `conv_bias`: absent by default (the record and its hash as before the keys
    /// existed, written out or not), Liu et al.'s net on request, and errors that name the
    /// key and what it allows.
    #[test]
    fn stem_and_conv_bias_parse_default_and_name_the_key() {
        let plain = "arch = \"resnet\"\nbatch_norm = true\n";
        let c = parse(plain).unwrap();
        let n = settings_of(&c.settings.learner);
        assert_eq!((n.stem, n.conv_bias), (StemKind::Same, false));
        let json = serde_json::to_value(&n).unwrap();
        assert!(json.get("stem").is_none() && json.get("conv_bias").is_none());
        let explicit = parse(&format!("{plain}stem = \"same\"\nconv_bias = false\n")).unwrap();
        assert_eq!(
            settings_hash(&c.settings).unwrap(),
            settings_hash(&explicit.settings).unwrap()
        );
        let liu = parse(
            "arch = \"resnet\"\nblocks = 9\nchannels = 64\nbottleneck = 32\n\
             batch_norm = true\nconv_bias = true\nstem = \"valid\"\nhead = \"conv\"\n\
             policy_channels = 16\nvalue_channels = 1\nvalue_hidden = 32\n",
        )
        .unwrap();
        let n = settings_of(&liu.settings.learner);
        assert_eq!(n.arch(), Arch::ResNet(ResNet::liu()));
        let json = serde_json::to_value(&n).unwrap();
        assert_eq!(
            (&json["stem"], &json["conv_bias"]),
            (&"valid".into(), &true.into())
        );
        assert_ne!(
            settings_hash(&liu.settings).unwrap(),
            settings_hash(&c.settings).unwrap()
        );
        for (spec, key, allowed) in [
            ("stem = \"valid\"\n", "learner.network.stem", "resnet"),
            ("conv_bias = true\n", "learner.network.conv_bias", "resnet"),
            (
                "arch = \"resnet\"\nconv_bias = true\n",
                "learner.network.conv_bias",
                "batch_norm = true",
            ),
            ("arch = \"resnet\"\nstem = \"full\"\n", "stem", "valid"),
        ] {
            let e = parse(spec).unwrap_err();
            assert!(e.contains(key) && e.contains(allowed), "{spec}: {e}");
        }
        for key in ["learner.network.stem", "learner.network.conv_bias"] {
            assert!(FIXED_SETTINGS.iter().any(|(k, _)| *k == key), "{key}");
        }
    }
}
