//! Tabular AlphaZero's records (docs/store.md), unchanged since the first runs so old stores
//! keep their heads:
//! - `table-chunk/v1` ([`TableChunk`]) and `table-snapshot/v1` ([`SnapshotRecord`]): the
//!   table after an iteration; a full checkpoint every `checkpoint_every` iterations, else the
//!   rows changed by the iteration on top of the previous snapshot (`base`). A delta's
//!   chunks are addressed but not stored: they are derived from the games (docs/store.md,
//!   "Derived snapshots").
//! - `evaluation/v1` ([`EvaluationRecord`]): the metrics of an iteration.

use serde::{Deserialize, Serialize};

use super::metrics::Metrics;
use super::table::Table;
use crate::game::PositionKey;
use crate::learners::LearnerError;
use crate::store::{Encoded, ObjectHash, Record, Store, StoreError};

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
    #[serde(deserialize_with = "stated_vec")]
    pub keys: Vec<K>,
    #[serde(deserialize_with = "stated_vec")]
    pub rows: Vec<f64>,
    /// Samples each row has been trained on since the run began.
    #[serde(deserialize_with = "stated_vec")]
    pub updates: Vec<u32>,
}

/// The most elements [`stated_vec`] allocates up front.
const MAX_STATED: usize = 1 << 24;

/// A sequence read into a vector allocated once at its stated length (serde's own grows
/// from at most 1 MiB by doubling: a 2 MiB chunk's rows were copied and faulted in twice).
/// Same bytes, same values: only the allocation differs.
fn stated_vec<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Stated<T>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Stated<T> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a sequence")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(MAX_STATED));
            while let Some(x) = seq.next_element()? {
                out.push(x);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(Stated(std::marker::PhantomData))
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

/// The most rows a restore reserves room for up front (more still fit: the table grows).
const MAX_RESERVED: u64 = 1 << 24;

/// About 2 MiB of rows per chunk.
pub(crate) fn rows_per_chunk(num_actions: usize) -> usize {
    let bytes = (num_actions + 1) * 8 + 16;
    ((2 << 20) / bytes).max(1)
}

/// The chunks of `rows` (table row indices in ascending key order), encoded and addressed,
/// in parallel. Written by hand in postcard's form of [`TableChunk`] (the reference,
/// [`chunks`] through postcard, is checked against it in the tests): postcard writes a
/// sequence of f64 one value at a time, and a PPPP table is 33 MB of them, encoded once for
/// every full checkpoint a checkout re-trains through.
pub(crate) fn encode_chunks<K: PositionKey>(
    table: &Table<K>,
    rows: &[usize],
) -> Result<Vec<Encoded>, StoreError> {
    let per = rows_per_chunk(table.num_actions());
    crate::par::try_map(crate::par::chunks(rows.len(), per), |k| {
        let bytes = encode_chunk(table, crate::par::chunk(rows, per, k))?;
        Ok(Encoded {
            kind: <TableChunk<K> as Record>::KIND,
            hash: ObjectHash::of(<TableChunk<K> as Record>::KIND, &bytes),
            bytes,
        })
    })
}

/// Postcard's bytes of the [`TableChunk`] of `part`: each field a length, then the keys and
/// the update counts as postcard writes them, the rows as postcard writes an f64 (8 bytes
/// little-endian), without its call per value.
fn encode_chunk<K: PositionKey>(table: &Table<K>, part: &[usize]) -> Result<Vec<u8>, StoreError> {
    fn put<T: Serialize + ?Sized>(
        out: Vec<u8>,
        value: &T,
        kind: &'static str,
    ) -> Result<Vec<u8>, StoreError> {
        postcard::to_extend(value, out).map_err(|source| StoreError::Encode { kind, source })
    }
    let kind = <TableChunk<K> as Record>::KIND;
    let stride = table.stride();
    let mut out = Vec::with_capacity(part.len() * (stride * 8 + 16) + 16);
    out = put(out, &(part.len() as u64), kind)?;
    for &i in part {
        out = put(out, table.key(i), kind)?;
    }
    out = put(out, &((part.len() * stride) as u64), kind)?;
    for &i in part {
        for x in table.row(i) {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    out = put(out, &(part.len() as u64), kind)?;
    for &i in part {
        out = put(out, &table.updates(i), kind)?;
    }
    Ok(out)
}

/// The chunks of `rows` (table row indices in ascending key order).
#[cfg(test)]
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
/// [`crate::runs::model_at`]. `seed` and `init_std` are the run's (unmaterialised rows
/// are their initial entries).
pub fn table_at<K: PositionKey>(
    store: &Store,
    snapshot: &ObjectHash,
    seed: u64,
    init_std: f64,
) -> Result<Table<K>, LearnerError> {
    let mut chain = Vec::new();
    let mut cur = Some(*snapshot);
    while let Some(h) = cur {
        let s: SnapshotRecord = store.get(&h)?;
        cur = if s.full { None } else { s.base };
        chain.push((h, s));
    }
    let num_actions = chain.first().map_or(0, |c| c.1.num_actions as usize);
    let mut table = Table::new(num_actions, seed, init_std);
    if let Some((_, s)) = chain.first() {
        // The rows the chain ends with, and an eighth more for the rows re-training after it
        // adds (grown by doubling, a 33 MB PPPP table would be copied whole by the first new
        // row); a plausible count only (the record is checked against its address, the
        // count against the rows below).
        let rows = s.entries.min(MAX_RESERVED);
        table.reserve((rows + rows / 8) as usize);
    }
    let stride = table.stride();
    for (_, s) in chain.iter().rev() {
        let chunks: Vec<TableChunk<K>> = store.get_many(&s.chunks)?;
        for (c, chunk) in s.chunks.iter().zip(chunks) {
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

    proptest! {
        /// The hand-written encoding is postcard's, byte for byte: keys of every size, rows
        /// of any value (signed zeros, infinities, NaNs, subnormals), update counts of every
        /// varint length, tables that fill several chunks.
        #[test]
        fn encoded_chunks_are_postcards(
            num_actions in 1usize..50,
            rows in prop::collection::vec((any::<u64>(), any::<u64>(), any::<u32>()), 0..300),
            every in 1usize..4,
        ) {
            let mut table: Table<u64> = Table::new(num_actions, 7, 0.01);
            for (key, bits, updates) in &rows {
                let row: Vec<f64> = (0..=num_actions as u64)
                    .map(|k| f64::from_bits(bits.rotate_left(k as u32 * 7) ^ k))
                    .collect();
                table.set_row(*key, &row, *updates);
            }
            let mut picked = table.sorted_rows();
            picked.retain(|&r| r % every == 0);
            let hand = encode_chunks(&table, &picked).unwrap();
            let reference = chunks(&table, &picked);
            prop_assert_eq!(hand.len(), reference.len());
            for (h, c) in hand.iter().zip(&reference) {
                let want = Encoded::of(c).unwrap();
                prop_assert_eq!(&h.bytes, &want.bytes);
                prop_assert_eq!(h.hash, want.hash);
                prop_assert_eq!(h.kind, want.kind);
            }
        }
    }

    /// Keys of another form than u64 (a tuple, as postcard writes it field by field).
    #[test]
    fn encoded_chunks_of_tuple_keys() {
        let mut table: Table<(u32, u8)> = Table::new(3, 1, 0.01);
        for k in 0..100_000u32 {
            table.set_row(
                (k * 977, (k % 251) as u8),
                &[f64::from(k), -0.0, 1e-310, f64::NAN],
                k.wrapping_mul(k),
            );
        }
        let rows = table.sorted_rows();
        let hand = encode_chunks(&table, &rows).unwrap();
        let reference = chunks(&table, &rows);
        assert!(reference.len() > 1, "several chunks");
        for (h, c) in hand.iter().zip(&reference) {
            assert_eq!(h.bytes, Encoded::of(c).unwrap().bytes);
        }
    }
}
