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

use super::tabular::TABULAR_METRICS as SHARED;
use crate::eval::MetricDef;
use crate::eval::reference::REFERENCE_METRICS;

mod cache;
mod eval;
mod learner;
mod model;
mod records;
mod settings;

pub use eval::NetEval;
pub use model::{NetSample, Network};
pub use records::NetworkEvaluation;
pub(crate) use records::{CheckpointRecord, OptimizerRecord, ParamsRecord};
pub use settings::{ArchKind, ArithKind, AugmentKind, HeadKind, NetworkSettings, ValueHeadKind};
pub(crate) use settings::{FIXED_SETTINGS, OptimizerKeys, input_of, settings_of};

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

#[cfg(test)]
mod tests;
