//! Solutions in the experiment store.
//!
//! A solution is a manifest object (`solution/v1`: variant, counts, start value, chunk
//! addresses) over chunk objects (`solution-chunk/v1`: up to [`CHUNK_POSITIONS`] sorted keys
//! and their values, at most a few MiB each). The `solutions` table maps the canonical variant
//! name to the manifest, so a second `solve` finds it at once.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::Solution;
use crate::game::PositionKey;
use crate::store::{ObjectHash, Record, SolutionRow, Store, StoreError};

/// Positions per chunk object (about 2 MiB of keys and values).
pub(crate) const CHUNK_POSITIONS: usize = 1 << 17;

/// The page cache while a solution is written, in KiB (about two chunks).
const SAVE_CACHE_KIB: i64 = 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct SolutionManifest {
    variant: String,
    positions: u64,
    /// Start value for the first player, [-1, 1].
    start_value: f64,
    chunks: Vec<ObjectHash>,
}

impl Record for SolutionManifest {
    const KIND: &'static str = "solution/v1";
}

/// A chunk: saved from slices of the solution (borrowed, so writing a solution copies no
/// chunk), loaded as owned vectors. A `Cow` of a slice encodes exactly as the `Vec` it
/// replaced (a length, then the elements), so the bytes and addresses are unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound = "K: PositionKey")]
struct SolutionChunk<'a, K: Clone> {
    keys: Cow<'a, [K]>,
    values: Cow<'a, [f64]>,
}

impl<K: PositionKey> Record for SolutionChunk<'_, K> {
    const KIND: &'static str = "solution-chunk/v1";
}

/// Stores a solution (chunks, manifest and its `solutions` row in one transaction) and
/// returns the manifest's address. `seconds` is the solve time, kept beside, not hashed.
pub fn save_solution<K: PositionKey>(
    store: &mut Store,
    sol: &Solution<K>,
    start_value: f64,
    seconds: f64,
) -> Result<ObjectHash, StoreError> {
    let keys = sol.keys();
    let values = sol.values();
    // A small page cache for the bulk write (`Store::write_bulk`): the peak memory of a
    // solve is otherwise the solution plus a cache full of its pages.
    store.write_bulk(SAVE_CACHE_KIB, |w| {
        let mut chunks = Vec::new();
        for (k, v) in keys
            .chunks(CHUNK_POSITIONS)
            .zip(values.chunks(CHUNK_POSITIONS))
        {
            chunks.push(w.put(&SolutionChunk {
                keys: Cow::Borrowed(k),
                values: Cow::Borrowed(v),
            })?);
        }
        let manifest = SolutionManifest {
            variant: sol.variant.clone(),
            positions: keys.len() as u64,
            start_value,
            chunks,
        };
        let hash = w.put(&manifest)?;
        w.put_solution(&SolutionRow {
            variant: sol.variant.clone(),
            hash,
            positions: keys.len() as u64,
            value: super::to_unit(start_value),
            engine_version: env!("CARGO_PKG_VERSION").to_string(),
            seconds,
            created_at: crate::store::utc_now_rfc3339(),
        })?;
        Ok(hash)
    })
}

/// Loads the stored solution of `variant` with its manifest address, if there is one.
/// Every chunk is checked against its address as it is read.
pub fn load_solution<K: PositionKey>(
    store: &Store,
    variant: &str,
) -> Result<Option<(Solution<K>, ObjectHash)>, StoreError> {
    let Some(row) = store.solution(variant)? else {
        return Ok(None);
    };
    let manifest: SolutionManifest = store.get(&row.hash)?;
    let mut keys = Vec::with_capacity(manifest.positions as usize);
    let mut values = Vec::with_capacity(manifest.positions as usize);
    for h in &manifest.chunks {
        let chunk: SolutionChunk<K> = store.get(h)?;
        if chunk.keys.len() != chunk.values.len() {
            return Err(StoreError::Corrupt {
                hash: *h,
                reason: "a solution chunk has unequal key and value counts".into(),
            });
        }
        keys.extend_from_slice(&chunk.keys);
        values.extend_from_slice(&chunk.values);
    }
    if keys.len() as u64 != manifest.positions || !keys.windows(2).all(|w| w[0] < w[1]) {
        return Err(StoreError::Corrupt {
            hash: row.hash,
            reason: "the solution's keys are not the sorted list its manifest promises".into(),
        });
    }
    Ok(Some((
        Solution::from_sorted(manifest.variant, keys, values),
        row.hash,
    )))
}

/// Whether the solutions of `g`'s variant in stores `a` and `b` hold the same positions and
/// the same values, compared as numbers: two solver versions may write one solution in
/// different bytes (a draw's value as -0.0 or 0.0), so their addresses differ while their
/// content is the same. `None` when either store has no solution of the variant.
pub fn solutions_agree<G: crate::game::Game>(
    g: &G,
    a: &Store,
    b: &Store,
) -> Result<Option<bool>, StoreError> {
    let variant = g.variant();
    let (Some((x, _)), Some((y, _))) = (
        load_solution::<G::Key>(a, &variant)?,
        load_solution::<G::Key>(b, &variant)?,
    ) else {
        return Ok(None);
    };
    // `==` on f64: -0.0 equals 0.0; a NaN (never written by the solver) equals nothing.
    Ok(Some(x.keys() == y.keys() && x.values() == y.values()))
}
