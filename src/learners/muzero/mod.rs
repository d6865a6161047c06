//! MuZero (`[learner] kind = "muzero"`; Schrittwieser et al. 2020, *Mastering Atari, Go,
//! chess and shogi by planning with a learned model*, Nature): a representation h, a
//! dynamics g (with reward) and a prediction f, each an MLP of the network engine, trained
//! by unrolling K steps along the games' real actions, and searched with the run's PUCT or
//! Gumbel search in the learned model instead of the rules. See docs/muzero.md.
//!
//! - **Samples** (unroll.rs): every fully searched decision of a stored game, with the K
//!   player actions after it (chance folded into the dynamics) and the K + 1 steps'
//!   value, reward and policy targets; past the end, absorbing steps.
//! - **Training** (train.rs): the replay buffer is the last `replay_games` games of the
//!   window; `train_steps` minibatches of `batch_size` drawn uniformly with replacement from
//!   the stream `muzero-train(i)` of the model seed; the paper's 1/K and 1/2 gradient
//!   scalings.
//! - **Search** (learned.rs): a game whose states are model states; legal actions masked at
//!   the root only. Self-play, `model:RUN@I,sims=N` and WR_p search there
//!   ([`crate::learners::Learner::plan`]).
//! - **Checkpoint** (every iteration, full): each network's `network-params/v1` and
//!   `network-optimizer/v1`, and the root `muzero-checkpoint/v1`.
//! - **Evaluation** (`muzero-evaluation/v1`): WR_p of the search in the learned model,
//!   ERR_p and MAE_v of f(h(s)) on S_test, coverage, the losses, MAE_v by unroll depth
//!   (depth.rs).

use super::tabular::TABULAR_METRICS as SHARED;
use crate::eval::MetricDef;

mod depth;
mod eval;
mod learned;
mod learner;
mod model;
mod records;
mod settings;
mod train;
mod unroll;

pub use eval::MuEval;
pub use model::MuZero;
pub use records::MuZeroEvaluation;
pub(crate) use settings::FIXED_SETTINGS;
pub use settings::{MuOptimizer, MuZeroSettings, StochasticSettings, ValueTarget};
pub use unroll::MuSample;

/// Unroll depths whose MAE_v is a declared metric (k = 0..=5: the paper's K).
pub(crate) const DEPTHS: usize = 6;

const fn depth_def(k: usize) -> MetricDef {
    const NAMES: [&str; DEPTHS] = [
        "mae_v_depth_0",
        "mae_v_depth_1",
        "mae_v_depth_2",
        "mae_v_depth_3",
        "mae_v_depth_4",
        "mae_v_depth_5",
    ];
    MetricDef {
        name: NAMES[k],
        description: "muzero: mean |v - v*| of the learned model's value at this unroll depth \
                      along real moves from the test positions, against the exact value of \
                      the real state reached (docs/muzero.md)",
    }
}

/// MuZero's metrics: the shared WR_p (here the search in the learned model), ERR_p, MAE_v
/// (f(h(s)) at the real position) and coverage definitions, the losses, the buffer, then
/// MAE_v by unroll depth.
pub(crate) const MUZERO_METRICS: &[MetricDef] = &[
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
        name: "loss_value",
        description: "network: mean squared value error ([-1, 1] scale) of the iteration's \
                      last minibatch",
    },
    MetricDef {
        name: "loss_reward",
        description: "muzero: mean squared reward error of the iteration's last minibatch, \
                      the unrolled steps weighted 1/K",
    },
    MetricDef {
        name: "loss_policy",
        description: "network: mean policy cross-entropy of the iteration's last minibatch",
    },
    MetricDef {
        name: "replay_samples",
        description: "network: samples in the replay buffer at the iteration's training",
    },
    depth_def(0),
    depth_def(1),
    depth_def(2),
    depth_def(3),
    depth_def(4),
    depth_def(5),
    MetricDef {
        name: "mae_root_model",
        description: "muzero: mean |root value - v*| over the test positions of the run's \
                      search (evaluation settings) in the learned model",
    },
    MetricDef {
        name: "mae_root_rules",
        description: "muzero: mean |root value - v*| over the test positions of the same \
                      search over the game's rules, f(h(s)) at its leaves",
    },
    MetricDef {
        name: "loss_q",
        description: "stochastic muzero: mean squared afterstate value error ([-1, 1] scale) \
                      of the iteration's last minibatch, weighted 1/K",
    },
    MetricDef {
        name: "loss_sigma",
        description: "stochastic muzero: mean cross-entropy of the learned chance sigma \
                      against the encoder's codes, last minibatch, weighted 1/K",
    },
    MetricDef {
        name: "loss_commitment",
        description: "stochastic muzero: mean commitment loss beta ||c - c^e||^2 of the \
                      encoder, last minibatch, weighted 1/K",
    },
    MetricDef {
        name: "code_usage",
        description: "stochastic muzero: distinct codes the encoder gives the observations \
                      after chance from the test positions (docs/muzero.md)",
    },
    MetricDef {
        name: "tv_chance",
        description: "stochastic muzero: mean total variation between the learned sigma and \
                      the real chance distribution carried to the codes by the encoder, over \
                      the test positions' chance afterstates (docs/muzero.md)",
    },
];

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_stochastic;
