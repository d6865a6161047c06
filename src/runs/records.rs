//! The records of a run (docs/store.md), versioned postcard structs addressed by blake3.
//!
//! - `run/v1` ([`RunRecord`]): variant, seed, the settings' hash, and the parent for branches.
//!   Its hash is the run's identity.
//! - `settings/v1` ([`crate::runs::Settings`]): everything that decides the results.
//! - `game/v1` ([`crate::record::GameRecord`]): each self-play game, visit counts included.
//! - `table-chunk/v1` ([`TableChunk`]) and `table-snapshot/v1` ([`SnapshotRecord`]): the
//!   table after an iteration; a full checkpoint every `checkpoint_every` iterations, else the
//!   rows changed by the iteration on top of the previous snapshot (`base`). A delta's
//!   chunks are addressed but not stored: they are derived from the games (docs/store.md).
//! - `evaluation/v1` ([`EvaluationRecord`]): the metrics of an iteration.
//! - `iteration/v1` ([`IterationRecord`]): the run's line (its run record without the
//!   parent), the iteration number, the settings in
//!   force, its games in order, its snapshot and evaluation, and the previous iteration
//!   record. The last one's hash is the run's head.
//!
//! Nothing machine-dependent (times, thread counts, paths, hosts, engine version) enters any
//! of them; those are plain columns of the store's tables.

use serde::{Deserialize, Serialize};

use crate::game::PositionKey;
use crate::learner::{Metrics, Table};
use crate::store::{ObjectHash, Record};

/// A run's identity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Canonical variant name.
    pub variant: String,
    pub seed: u64,
    /// The `settings/v1` record the run starts with.
    pub settings: ObjectHash,
    /// For a branch: the parent run and the iteration it branches at.
    pub parent: Option<Parent>,
}

/// Where a branch leaves its parent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Parent {
    /// The parent's `run/v1` hash.
    pub run: ObjectHash,
    /// The parent's iteration the branch continues from (its first I iterations are shared).
    pub iteration: u32,
    /// The parent's `iteration/v1` record of that iteration.
    pub iteration_record: ObjectHash,
    /// The settings changed, as `key=value` texts, in the order given.
    pub overrides: Vec<String>,
}

impl Record for RunRecord {
    const KIND: &'static str = "run/v1";
}

/// One iteration of a run; the last one's hash is the run's head.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IterationRecord {
    /// The run's *line*: the hash of its `run/v1` record with `parent` left out (for a root
    /// run, its run record; for a branch, a record stored beside its own). So a branch with
    /// no overrides and its parent's seed makes its parent's records.
    pub run: ObjectHash,
    /// 1-based.
    pub iteration: u32,
    /// The `settings/v1` in force.
    pub settings: ObjectHash,
    /// The iteration's self-play games, in game order.
    pub games: Vec<ObjectHash>,
    /// The table after training.
    pub snapshot: ObjectHash,
    pub evaluation: ObjectHash,
    /// The previous iteration record (`None` for the first).
    pub previous: Option<ObjectHash>,
}

impl Record for IterationRecord {
    const KIND: &'static str = "iteration/v1";
}

/// The metrics of one iteration (0: the untrained table).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvaluationRecord {
    pub iteration: u32,
    pub metrics: Metrics,
}

impl Record for EvaluationRecord {
    const KIND: &'static str = "evaluation/v1";
}

/// Rows of the table, sorted by key: `rows` holds `|A| + 1` f64 per key (logits, then v_hat).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(bound = "K: PositionKey")]
pub struct TableChunk<K> {
    pub keys: Vec<K>,
    pub rows: Vec<f64>,
    /// Samples each row has been trained on since the run began.
    pub updates: Vec<u32>,
}

impl<K: PositionKey> Record for TableChunk<K> {
    const KIND: &'static str = "table-chunk/v1";
}

/// The table after an iteration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SnapshotRecord {
    pub iteration: u32,
    /// |A|.
    pub num_actions: u32,
    /// A full checkpoint (every materialised row) or the rows changed by this iteration.
    pub full: bool,
    /// For a delta: the snapshot it applies on (`None`: the initial table).
    pub base: Option<ObjectHash>,
    /// Materialised rows of the whole table after the iteration.
    pub entries: u64,
    /// The chunks, ascending by key.
    pub chunks: Vec<ObjectHash>,
}

impl Record for SnapshotRecord {
    const KIND: &'static str = "table-snapshot/v1";
}

/// About 2 MiB of rows per chunk.
pub fn rows_per_chunk(num_actions: usize) -> usize {
    let bytes = (num_actions + 1) * 8 + 16;
    ((2 << 20) / bytes).max(1)
}

/// The chunks of `rows` (table row indices in ascending key order).
pub fn chunks<K: PositionKey>(table: &Table<K>, rows: &[usize]) -> Vec<TableChunk<K>> {
    let stride = table.stride();
    rows.chunks(rows_per_chunk(table.num_actions()))
        .map(|part| {
            let mut c = TableChunk {
                keys: Vec::with_capacity(part.len()),
                rows: Vec::with_capacity(part.len() * stride),
                updates: Vec::with_capacity(part.len()),
            };
            for &i in part {
                c.keys.push(*table.key(i));
                c.rows.extend_from_slice(table.row(i));
                c.updates.push(table.updates(i));
            }
            c
        })
        .collect()
}
