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
use crate::store::{ObjectHash, Record, Store, StoreError, address};

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

/// `table-sparse/v1`: a [`TableChunk`] stored compactly in its place (docs/store.md,
/// "Aliases"). A row keeps only the entries that differ, bit for bit, from its initial
/// entries, which are a function of the model seed, `init_std` and the key
/// (`table-init(key)`): training changes the logits of a position's legal actions and its
/// v_hat, so in a game with many actions and few legal ones most entries stay initial (CDC
/// 2x4: 41 entries, a handful legal).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(bound = "K: PositionKey")]
pub struct SparseChunk<K> {
    pub keys: Vec<K>,
    /// Row j's mask is bytes `j * w .. (j + 1) * w`, `w = ceil((|A| + 1) / 8)`: bit e (byte
    /// e / 8, bit e % 8) set when entry e is stored.
    pub masks: Vec<u8>,
    /// The stored entries, row by row, each row's in entry order.
    pub values: Vec<f64>,
    pub updates: Vec<u32>,
}

impl<K: PositionKey> Record for SparseChunk<K> {
    const KIND: &'static str = "table-sparse/v1";
}

/// Bytes of one row's mask for rows of `stride` entries.
fn mask_width(stride: usize) -> usize {
    stride.div_ceil(8)
}

impl<K: PositionKey> SparseChunk<K> {
    /// The sparse form of `chunk`, whose rows have `stride` entries.
    pub fn of(chunk: &TableChunk<K>, stride: usize, seed: u64, init_std: f64) -> SparseChunk<K> {
        let w = mask_width(stride);
        let mut out = SparseChunk {
            keys: chunk.keys.clone(),
            masks: vec![0; chunk.keys.len() * w],
            values: Vec::new(),
            updates: chunk.updates.clone(),
        };
        let mut init = vec![0.0; stride];
        for (j, key) in chunk.keys.iter().enumerate() {
            crate::learner::table::initial_entry(seed, init_std, key, &mut init);
            let row = &chunk.rows[j * stride..(j + 1) * stride];
            for (e, (&x, &x0)) in row.iter().zip(&init).enumerate() {
                if x.to_bits() != x0.to_bits() {
                    out.masks[j * w + e / 8] |= 1 << (e % 8);
                    out.values.push(x);
                }
            }
        }
        out
    }

    /// The chunk this stands for (`Err`: the reason it cannot be decoded).
    pub fn dense(&self, stride: usize, seed: u64, init_std: f64) -> Result<TableChunk<K>, String> {
        let w = mask_width(stride);
        let n = self.keys.len();
        if self.masks.len() != n * w || self.updates.len() != n {
            return Err("its masks or update counts do not match its keys".into());
        }
        let mut rows = vec![0.0; n * stride];
        let mut next = self.values.iter();
        for (j, key) in self.keys.iter().enumerate() {
            let row = &mut rows[j * stride..(j + 1) * stride];
            crate::learner::table::initial_entry(seed, init_std, key, row);
            for (e, x) in row.iter_mut().enumerate() {
                if self.masks[j * w + e / 8] & (1 << (e % 8)) != 0 {
                    *x = *next
                        .next()
                        .ok_or("its masks name more entries than it stores")?;
                }
            }
        }
        if next.next().is_some() {
            return Err("it stores more entries than its masks name".into());
        }
        Ok(TableChunk {
            keys: self.keys.clone(),
            rows,
            updates: self.updates.clone(),
        })
    }
}

/// Chunk `c`: stored as itself, or as a [`SparseChunk`] alias, decoded and checked against
/// `c` (the address stays the chunk's).
fn read_chunk<K: PositionKey>(
    store: &Store,
    c: &ObjectHash,
    stride: usize,
    seed: u64,
    init_std: f64,
) -> Result<TableChunk<K>, RunError> {
    if store.contains(c)? {
        return Ok(store.get(c)?);
    }
    let Some(a) = store.alias(c)? else {
        return Err(StoreError::NotFound(*c).into());
    };
    let sparse: SparseChunk<K> = store.get(&a)?;
    let corrupt = |reason: String| StoreError::Corrupt { hash: a, reason };
    let chunk = sparse
        .dense(stride, seed, init_std)
        .map_err(|r| corrupt(format!("the sparse form of table chunk {c}: {r}")))?;
    if address(&chunk)?.0 != *c {
        return Err(corrupt(format!(
            "the sparse form of table chunk {c} decodes to other bytes"
        ))
        .into());
    }
    Ok(chunk)
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
            let chunk = read_chunk::<K>(store, c, stride, seed, init_std)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A chunk of `keys` over |A| = 5 whose rows start initial and have the entries `changed`
    /// (row, entry, value) set.
    fn chunk(keys: &[u64], changed: &[(usize, usize, f64)], seed: u64) -> TableChunk<u64> {
        let stride = 6;
        let mut rows = vec![0.0; keys.len() * stride];
        for (j, k) in keys.iter().enumerate() {
            crate::learner::table::initial_entry(seed, 0.01, k, &mut rows[j * stride..][..stride]);
        }
        for &(j, e, x) in changed {
            rows[(j % keys.len()) * stride + e % stride] = x;
        }
        TableChunk {
            keys: keys.to_vec(),
            rows,
            updates: (0..keys.len() as u32).collect(),
        }
    }

    proptest! {
        /// The sparse form decodes to the chunk bit for bit, and stores only changed entries.
        #[test]
        fn sparse_round_trips(
            keys in proptest::collection::btree_set(any::<u64>(), 1..40),
            changed in proptest::collection::vec((0usize..64, 0usize..6, -3.0f64..3.0), 0..80),
            seed in any::<u64>(),
        ) {
            let keys: Vec<u64> = keys.into_iter().collect();
            let c = chunk(&keys, &changed, seed);
            let s = SparseChunk::of(&c, 6, seed, 0.01);
            let distinct: std::collections::BTreeSet<(usize, usize)> =
                changed.iter().map(|&(j, e, _)| (j % keys.len(), e % 6)).collect();
            prop_assert!(s.values.len() <= distinct.len());
            let d = s.dense(6, seed, 0.01).unwrap();
            prop_assert_eq!(address(&d).unwrap().0, address(&c).unwrap().0);
            prop_assert_eq!(d, c);
        }
    }

    /// -0.0 and 0.0 differ: the sparse form compares bits, not values.
    #[test]
    fn sparse_keeps_signed_zeros_and_refuses_malformed_forms() {
        let c = chunk(&[7, 9], &[(0, 1, -0.0), (1, 5, 0.0)], 3);
        let s = SparseChunk::of(&c, 6, 3, 0.01);
        assert_eq!(s.values.len(), 2);
        let d = s.dense(6, 3, 0.01).unwrap();
        assert_eq!(d.rows[1].to_bits(), (-0.0f64).to_bits());
        let mut short = s.clone();
        short.values.pop();
        assert!(
            short
                .dense(6, 3, 0.01)
                .unwrap_err()
                .contains("more entries")
        );
        let mut long = s.clone();
        long.values.push(1.0);
        assert!(
            long.dense(6, 3, 0.01)
                .unwrap_err()
                .contains("more entries than its masks")
        );
        let mut masks = s;
        masks.masks.pop();
        assert!(masks.dense(6, 3, 0.01).unwrap_err().contains("masks"));
    }
}
