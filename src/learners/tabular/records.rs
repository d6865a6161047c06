//! Tabular AlphaZero's records (docs/store.md), unchanged since the first runs so old stores
//! keep their heads:
//! - `table-chunk/v1` ([`TableChunk`]) and `table-snapshot/v1` ([`SnapshotRecord`]): the
//!   table after an iteration; a full checkpoint every `checkpoint_every` iterations, else the
//!   rows changed by the iteration on top of the previous snapshot (`base`). A delta's
//!   chunks are addressed but not stored: they are derived from the games (docs/store.md,
//!   "Derived snapshots").
//! - `evaluation/v1` ([`EvaluationRecord`]): the metrics of an iteration.

use serde::{Deserialize, Serialize};

use crate::game::PositionKey;
use crate::learner::{Metrics, Table};
use crate::runs::RunError;
use crate::store::{ObjectHash, Record, Store, StoreError};

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

/// Reconstructs the table a snapshot describes: the last full checkpoint at or before it, then
/// every delta after it, in order. Every chunk of that chain must be stored
/// ([`crate::learners::Learner::stored`]); a run's table at any iteration, derived deltas included, is
/// [`crate::runs::life::model_at`]. `seed` and `init_std` are the run's (unmaterialised rows
/// are their initial entries).
pub fn table_at<K: PositionKey>(
    store: &Store,
    snapshot: &ObjectHash,
    seed: u64,
    init_std: f64,
) -> Result<Table<K>, RunError> {
    let mut chain = Vec::new();
    let mut cur = Some(*snapshot);
    while let Some(h) = cur {
        let s: SnapshotRecord = store.get(&h)?;
        cur = if s.full { None } else { s.base };
        chain.push((h, s));
    }
    let num_actions = chain.first().map_or(0, |c| c.1.num_actions as usize);
    let mut table = Table::new(num_actions, seed, init_std);
    let stride = table.stride();
    for (_, s) in chain.iter().rev() {
        for c in &s.chunks {
            let chunk: TableChunk<K> = store.get(c)?;
            if chunk.rows.len() != chunk.keys.len() * stride
                || chunk.updates.len() != chunk.keys.len()
            {
                return Err(StoreError::Corrupt {
                    hash: *c,
                    reason: "a table chunk's rows do not match its keys".into(),
                }
                .into());
            }
            for (j, key) in chunk.keys.iter().enumerate() {
                table.set_row(
                    *key,
                    &chunk.rows[j * stride..(j + 1) * stride],
                    chunk.updates[j],
                );
            }
        }
    }
    if let Some((h, s)) = chain.first()
        && s.entries != table.len() as u64
    {
        return Err(StoreError::Corrupt {
            hash: *h,
            reason: format!(
                "the snapshot promises {} rows; its chain holds {}",
                s.entries,
                table.len()
            ),
        }
        .into());
    }
    Ok(table)
}
