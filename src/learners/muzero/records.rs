//! MuZero's versioned records: the checkpoint root and the evaluation. The weights and the
//! optimiser states are the network learner's `network-params/v1` and
//! `network-optimizer/v1`, one of each per network.

use serde::{Deserialize, Serialize};

use crate::eval::WinRate;
use crate::store::{ObjectHash, Record};

/// `muzero-checkpoint/v1`: the root of a checkpoint. Networks in the order representation,
/// dynamics, prediction, then (Stochastic MuZero) afterstate dynamics, afterstate
/// prediction, encoder.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct MuCheckpointRecord {
    pub(crate) iteration: u32,
    /// Each network's parameters in all (a check against the run's settings).
    pub(crate) parameters: Vec<u64>,
    pub(crate) params: Vec<ObjectHash>,
    pub(crate) optimizers: Vec<ObjectHash>,
    /// Mean losses of the iteration's last training step (the last three Stochastic
    /// MuZero's: afterstate value, sigma, commitment).
    pub(crate) loss_value: f64,
    pub(crate) loss_reward: f64,
    pub(crate) loss_policy: f64,
    pub(crate) loss_q: f64,
    pub(crate) loss_sigma: f64,
    pub(crate) loss_commitment: f64,
    /// Samples in the replay buffer at the last training.
    pub(crate) buffer: u64,
}

impl Record for MuCheckpointRecord {
    const KIND: &'static str = "muzero-checkpoint/v1";
}

/// `muzero-evaluation/v1`: WR_p (the search in the learned model against the optimal
/// player), ERR_p and MAE_v (prediction at the real position: f(h(s))), coverage, the last
/// training step's losses, and MAE_v by unroll depth (empty where not measured).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MuZeroEvaluation {
    pub iteration: u32,
    pub wr_p: Option<WinRate>,
    pub err_p: Option<f64>,
    pub mae_v: Option<f64>,
    pub seen: u64,
    pub(crate) loss_value: f64,
    pub(crate) loss_reward: f64,
    pub(crate) loss_policy: f64,
    pub buffer: u64,
    /// MAE_v at unroll depth k = 0..=K (docs/muzero.md, "MAE_v by depth").
    pub mae_v_depth: Vec<f64>,
    /// The root value's MAE against the exact value on S_test: the search in the learned
    /// model, and the same search over the rules (depth.rs).
    pub mae_root_model: Option<f64>,
    pub mae_root_rules: Option<f64>,
    /// Stochastic MuZero (None for MuZero): the last step's afterstate-value, sigma and
    /// commitment losses, the codes the encoder uses and the total variation of the
    /// learned chance (docs/muzero.md, "Stochastic MuZero's metrics").
    pub(crate) loss_q: Option<f64>,
    pub(crate) loss_sigma: Option<f64>,
    pub(crate) loss_commitment: Option<f64>,
    pub code_usage: Option<f64>,
    pub tv_chance: Option<f64>,
}

impl Record for MuZeroEvaluation {
    const KIND: &'static str = "muzero-evaluation/v1";
}
