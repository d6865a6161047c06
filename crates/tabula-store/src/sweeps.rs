//! The sweep tables of `schema/0006_sweeps.sql`: sweeps and their member runs.

use rusqlite::{Connection, params};

use super::ObjectHash;
use super::resolve::{Found, by_name_or_prefix};
use super::runs::blob_hash;

/// A sweep's row.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepRow {
    /// The `sweep/v1` record.
    pub hash: ObjectHash,
    pub name: String,
    pub points: u32,
    pub seeds: u32,
    /// The sweep file as given.
    pub sweep_toml: String,
    pub created_at: String,
}

/// One run of a sweep: its grid point, seed and run row id.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepMember {
    pub point: u32,
    pub seed_index: u32,
    pub seed: u64,
    /// The point's axis values as a JSON object.
    pub point_json: String,
    pub run_id: i64,
}

pub(super) fn add(conn: &Connection, s: &SweepRow) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO sweeps (hash, name, points, seeds, sweep_toml, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(hash) DO NOTHING",
    )?
    .execute(params![
        &s.hash.0[..],
        s.name,
        s.points,
        s.seeds,
        s.sweep_toml,
        s.created_at
    ])?;
    Ok(())
}

pub(super) fn remove(conn: &Connection, hash: &ObjectHash) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM sweep_members WHERE sweep = ?1")?
        .execute(params![&hash.0[..]])?;
    conn.prepare_cached("DELETE FROM sweeps WHERE hash = ?1")?
        .execute(params![&hash.0[..]])?;
    Ok(())
}

pub(super) fn add_member(
    conn: &Connection,
    sweep: &ObjectHash,
    m: &SweepMember,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO sweep_members (sweep, point, seed_index, seed, point_json, run_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        &sweep.0[..],
        m.point,
        m.seed_index,
        m.seed.to_string(),
        m.point_json,
        m.run_id
    ])?;
    Ok(())
}

fn sweep_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SweepRow> {
    Ok(SweepRow {
        hash: blob_hash(r.get(0)?, 0)?,
        name: r.get(1)?,
        points: r.get(2)?,
        seeds: r.get(3)?,
        sweep_toml: r.get(4)?,
        created_at: r.get(5)?,
    })
}

const SWEEP_COLUMNS: &str = "hash, name, points, seeds, sweep_toml, created_at";

/// Every sweep, oldest first.
pub(super) fn list(conn: &Connection) -> rusqlite::Result<Vec<SweepRow>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {SWEEP_COLUMNS} FROM sweeps ORDER BY created_at, rowid"
    ))?;
    stmt.query_map([], sweep_row)?.collect()
}

/// A sweep by name, or by a hash prefix (the rule of `resolve.rs`). Several sweeps of one
/// name or one prefix are [`Found::Many`].
pub(super) fn find(conn: &Connection, text: &str) -> rusqlite::Result<Found<SweepRow>> {
    by_name_or_prefix(
        conn,
        &format!("SELECT {SWEEP_COLUMNS} FROM sweeps"),
        "hash BETWEEN ?1 AND ?2",
        "created_at, rowid",
        text,
        sweep_row,
    )
}

/// The member runs of a sweep in this store, in grid order.
pub(super) fn members(conn: &Connection, sweep: &ObjectHash) -> rusqlite::Result<Vec<SweepMember>> {
    let mut stmt = conn.prepare_cached(
        "SELECT point, seed_index, seed, point_json, run_id FROM sweep_members
         WHERE sweep = ?1 ORDER BY point, seed_index",
    )?;
    stmt.query_map([&sweep.0[..]], |r| {
        let seed: String = r.get(2)?;
        Ok(SweepMember {
            point: r.get(0)?,
            seed_index: r.get(1)?,
            seed: seed.parse().unwrap_or(0),
            point_json: r.get(3)?,
            run_id: r.get(4)?,
        })
    })?
    .collect()
}
