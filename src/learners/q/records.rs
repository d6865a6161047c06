//! Q-learning's records (docs/store.md):
//! - `q-checkpoint/v1` ([`QCheckpoint`]): the root of a checkpoint: the lookup table's rows
//!   in key order (every checkpoint full: the reduced boards' tables are small), or the
//!   address of the network's own checkpoint (`network-checkpoint/v1` and its weights and
//!   optimiser state, as the network learner stores them); and the last training's TD error.
//! - `q-evaluation/v1` ([`QEvaluation`]): the metrics of an iteration.

use serde::{Deserialize, Serialize};

use crate::eval::WinRate;
use crate::eval::reference::GreedyScore;
use crate::game::PositionKey;
use crate::store::{ObjectHash, Record};

/// The root of a Q-learning checkpoint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(bound = "K: PositionKey")]
pub(crate) struct QCheckpoint<K> {
    pub iteration: u32,
    /// |A|: the length of a row.
    pub num_actions: u32,
    /// The table's positions, ascending (empty with a network).
    pub keys: Vec<K>,
    /// |A| Q-values per key, in key order.
    pub rows: Vec<f64>,
    /// Updates each row has received since the run began.
    pub updates: Vec<u32>,
    /// The network's checkpoint root (`None`: a table).
    pub network: Option<ObjectHash>,
    pub(crate) stats: TrainStats,
}

impl<K: PositionKey> Record for QCheckpoint<K> {
    const KIND: &'static str = "q-checkpoint/v1";
}

/// What the last training did (zero before the first).
#[derive(Copy, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct TrainStats {
    /// Mean |Q(S, a) - y| over the updates of the last training (y its TD target).
    pub(crate) td_error: f64,
    /// Mean Huber loss of the last training's minibatches (the network), or mean squared
    /// TD error / 2 (the table).
    pub loss: f64,
    /// Transitions in the training window at the last training.
    pub(crate) transitions: u64,
    /// Minibatches of the last training (0 while the window holds fewer than `prefill`).
    pub(crate) minibatches: u64,
}

/// One iteration's metrics (0: the untrained model). `None` where not measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QEvaluation {
    pub iteration: u32,
    /// WR_p of the greedy policy (argmax Q) against the optimal player.
    pub wr_p: Option<WinRate>,
    /// ERR_p of the greedy policy over the test positions.
    pub err_p: Option<f64>,
    /// The greedy policy against the deterministic greedy player.
    pub greedy: Option<GreedyScore>,
    pub(crate) stats: TrainStats,
    /// Table rows (0 with a network).
    pub rows: u64,
}

impl Record for QEvaluation {
    const KIND: &'static str = "q-evaluation/v1";
}
