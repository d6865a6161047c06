//! The `solutions` table: which variants are solved, and where their manifests are.

use rusqlite::{Connection, OptionalExtension, params};

use super::ObjectHash;

/// One row of `solutions`.
#[derive(Clone, Debug, PartialEq)]
pub struct SolutionRow {
    /// The canonical variant name, rule parameters included.
    pub variant: String,
    /// The solution manifest object.
    pub hash: ObjectHash,
    pub positions: u64,
    /// The start value on the [0, 1] scale.
    pub value: f64,
    pub engine_version: String,
    /// Wall-clock seconds of the solve (not hashed).
    pub seconds: f64,
    /// UTC time of the solve, RFC 3339 (not hashed).
    pub created_at: String,
}

/// Every solved variant's name, in name order.
pub(super) fn variants(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    conn.prepare_cached("SELECT variant FROM solutions ORDER BY variant")?
        .query_map([], |r| r.get(0))?
        .collect()
}

pub(super) fn find(conn: &Connection, variant: &str) -> rusqlite::Result<Option<SolutionRow>> {
    conn.prepare_cached(
        "SELECT variant, hash, positions, value, engine_version, seconds, created_at
         FROM solutions WHERE variant = ?1",
    )?
    .query_row([variant], |r| {
        let hash: Vec<u8> = r.get(1)?;
        let hash = <[u8; 32]>::try_from(hash.as_slice()).map_err(|_| {
            rusqlite::Error::FromSqlConversionFailure(
                1,
                rusqlite::types::Type::Blob,
                "solution hash is not 32 bytes".into(),
            )
        })?;
        Ok(SolutionRow {
            variant: r.get(0)?,
            hash: ObjectHash(hash),
            positions: r.get::<_, i64>(2)? as u64,
            value: r.get(3)?,
            engine_version: r.get(4)?,
            seconds: r.get(5)?,
            created_at: r.get(6)?,
        })
    })
    .optional()
}

pub(super) fn upsert(conn: &Connection, row: &SolutionRow) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO solutions (variant, hash, positions, value, engine_version, seconds, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT(variant) DO UPDATE SET hash = excluded.hash, positions = excluded.positions,
             value = excluded.value, engine_version = excluded.engine_version,
             seconds = excluded.seconds, created_at = excluded.created_at",
    )?
    .execute(params![
        row.variant,
        &row.hash.0[..],
        row.positions as i64,
        row.value,
        row.engine_version,
        row.seconds,
        row.created_at
    ])?;
    Ok(())
}
