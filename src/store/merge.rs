//! `tabula merge`: copy the records of several stores into one, by address (design in
//! `docs/experiments.md`).
//!
//! Everything lands in ONE write transaction on the destination: any error (a damaged
//! object, a run that conflicts, a table this build does not know) rolls all of it back, so
//! the destination is never half-written.
//!
//! - Objects are copied by hash after recomputing every hash from kind and bytes (an object
//!   that does not hash to its address is refused, naming it and its store).
//! - Solutions are keyed by variant; a differing solution of the same variant is a conflict.
//! - A run is identified by its `run/v1` hash and name. If the destination has it, the two
//!   must be the same line: the shorter one's head must be the longer one's iteration record
//!   at that iteration (else: conflict, refused); the destination keeps the longer. A new run
//!   keeps its id when that id is free, else takes the next free one (ids are plain numbers,
//!   not hashed: heads stay equal); branches' `parent_run` follow their parents' new ids.
//! - Every other table with a `run_id` column (iterations, games, evaluations, ...) is copied
//!   row by row with the run id mapped, skipping rows already present (idempotent).
//! - Sweeps are keyed by their `sweep/v1` hash; member rows follow their runs' ids.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params_from_iter};

use super::{ObjectHash, Result, Store, StoreError, schema};

/// What merging one source did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct MergedSource {
    pub path: String,
    pub objects_new: u64,
    pub objects_present: u64,
    pub runs_new: u64,
    pub runs_extended: u64,
    pub runs_present: u64,
    /// Runs whose id was taken in the destination: (id in the source, id now).
    pub renumbered: Vec<(i64, i64)>,
    pub sweeps_new: u64,
    pub rows_new: u64,
}

/// Tables merged by their own rules; every other table must have a `run_id` column.
const SPECIAL: &[&str] = &[
    "objects",
    "packs",
    "solutions",
    "runs",
    "sweeps",
    "sweep_members",
    "metric_defs",
];

fn fail(path: &Path, what: impl std::fmt::Display) -> StoreError {
    StoreError::Query(format!(
        "merge: {}: {what}; nothing was merged",
        path.display()
    ))
}

/// Opens a source read-only and checks it is a store of exactly this build's schema.
pub(super) fn open_source(path: &Path) -> Result<Connection> {
    if !path.exists() {
        return Err(StoreError::Missing(path.display().to_string()));
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| super::sqlite(path, e))?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| fail(path, format!("not a tabula store ({e})")))?;
    if version != schema::VERSION {
        return Err(fail(
            path,
            format!(
                "schema version {version}, but this tabula writes version {} (merge only \
                 stores of the same version: open the older one once with this tabula, e.g. \
                 `tabula --db {} ls`, to migrate it, or use the tabula that wrote it)",
                schema::VERSION,
                path.display()
            ),
        ));
    }
    Ok(conn)
}

fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info(\"{table}\")"))?;
    stmt.query_map([], |r| r.get::<_, String>(1))?.collect()
}

fn tables(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
         ORDER BY name",
    )?;
    stmt.query_map([], |r| r.get(0))?.collect()
}

/// Merges every store of `sources` into `into` in one transaction.
pub(super) fn merge(into: &mut Store, sources: &[PathBuf]) -> Result<Vec<MergedSource>> {
    let dest_path = into.path.clone();
    let mut conns = Vec::new();
    for p in sources {
        if same_file(p, &dest_path) {
            return Err(fail(p, "is the destination store itself"));
        }
        conns.push((p.clone(), open_source(p)?));
    }
    into.write(|w| {
        let mut out = Vec::new();
        for (p, src) in &conns {
            let sql = |e: rusqlite::Error| fail(p, e);
            out.push(merge_one(w.tx, src, p).map_err(|e| match e {
                MergeError::Sqlite(e) => sql(e),
                MergeError::Store(e) => e,
            })?);
        }
        Ok(out)
    })
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

enum MergeError {
    Sqlite(rusqlite::Error),
    Store(StoreError),
}

impl From<rusqlite::Error> for MergeError {
    fn from(e: rusqlite::Error) -> MergeError {
        MergeError::Sqlite(e)
    }
}

impl From<StoreError> for MergeError {
    fn from(e: StoreError) -> MergeError {
        MergeError::Store(e)
    }
}

type Row = Vec<SqlValue>;

fn select_all(
    conn: &Connection,
    table: &str,
    cols: &[String],
    filter: &str,
) -> rusqlite::Result<Vec<Row>> {
    let list = quoted(cols);
    let mut stmt = conn.prepare(&format!("SELECT {list} FROM \"{table}\" {filter}"))?;
    let n = cols.len();
    stmt.query_map([], |r| (0..n).map(|i| r.get::<_, SqlValue>(i)).collect())?
        .collect()
}

fn quoted(cols: &[String]) -> String {
    cols.iter()
        .map(|c| format!("\"{c}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `INSERT ... ON CONFLICT DO NOTHING`; returns whether the row was new.
fn insert(conn: &Connection, table: &str, cols: &[String], row: &Row) -> rusqlite::Result<bool> {
    let marks = (1..=cols.len())
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let n = conn
        .prepare_cached(&format!(
            "INSERT INTO \"{table}\" ({}) VALUES ({marks}) ON CONFLICT DO NOTHING",
            quoted(cols)
        ))?
        .execute(params_from_iter(row.iter()))?;
    Ok(n > 0)
}

fn blob32(v: &SqlValue) -> Option<ObjectHash> {
    match v {
        SqlValue::Blob(b) => <[u8; 32]>::try_from(b.as_slice()).ok().map(ObjectHash),
        _ => None,
    }
}

fn merge_one(dest: &Connection, src: &Connection, path: &Path) -> Result<MergedSource, MergeError> {
    let mut rep = MergedSource {
        path: path.display().to_string(),
        ..MergedSource::default()
    };
    let src_tables = tables(src)?;
    let dest_tables: BTreeSet<String> = tables(dest)?.into_iter().collect();
    let mut run_tables = Vec::new();
    for t in &src_tables {
        if !dest_tables.contains(t) {
            return Err(fail(
                path,
                format!("table `{t}` does not exist in the destination"),
            )
            .into());
        }
        if SPECIAL.contains(&t.as_str()) {
            continue;
        }
        let cols = columns(src, t)?;
        if !cols.iter().any(|c| c == "run_id") {
            return Err(fail(
                path,
                format!("merge does not know how to copy table `{t}` (it has no run_id column)"),
            )
            .into());
        }
        run_tables.push((t.clone(), cols));
    }

    // 0. Metric declarations (the `metrics` rows below name them): the source's, in its
    // declaration order, declared in the destination (which re-creates `metrics_wide` when
    // one is new).
    if src_tables.iter().any(|t| t == "metric_defs") {
        let defs: Vec<(String, String)> = src
            .prepare("SELECT name, description FROM metric_defs ORDER BY position")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let defs: Vec<(&str, &str)> = defs.iter().map(|(n, d)| (n.as_str(), d.as_str())).collect();
        super::runs::declare_metrics(dest, &defs)?;
    }

    // 1. Packs, then objects (an elided object's bytes live partly in packs), every address
    // recomputed from the decoded bytes; stored forms are copied as they are.
    let mut pack_ids: BTreeMap<i64, i64> = BTreeMap::new();
    let cache = super::packs::Cache::default();
    {
        let mut stmt = src.prepare(
            "SELECT id, hash, kind, members, size, prefixes, bytes FROM packs ORDER BY id",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let id: i64 = r.get(0)?;
            let stored: Vec<u8> = r.get(1)?;
            let kind: String = r.get(2)?;
            let members: i64 = r.get(3)?;
            let size: i64 = r.get(4)?;
            let prefixes: Vec<u8> = r.get(5)?;
            let bytes: Vec<u8> = r.get(6)?;
            let hash = ObjectHash(<[u8; 32]>::try_from(stored.as_slice()).unwrap_or([0; 32]));
            let pack = super::packs::decode(hash, kind.clone(), members, &bytes).map_err(|e| {
                MergeError::Store(match e.into_store_error(path) {
                    StoreError::Corrupt { hash, reason } => StoreError::Corrupt {
                        hash,
                        reason: format!("in {}: {reason}; nothing was merged", path.display()),
                    },
                    e => e,
                })
            })?;
            let expect: Vec<u8> = pack
                .members
                .iter()
                .flat_map(|(h, _)| h.0[..4].to_vec())
                .collect();
            let sum: i64 = pack.members.iter().map(|(_, b)| b.len() as i64).sum();
            if expect != prefixes || sum != size {
                return Err(MergeError::Store(StoreError::Corrupt {
                    hash,
                    reason: format!(
                        "in {}: pack: its prefixes or size column disagree with its members; \
                         nothing was merged",
                        path.display()
                    ),
                }));
            }
            dest.prepare_cached(
                "INSERT INTO packs (hash, kind, members, size, prefixes, bytes)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(hash) DO NOTHING",
            )?
            .execute(rusqlite::params![
                &stored, kind, members, size, prefixes, bytes
            ])?;
            let to: i64 =
                dest.query_row("SELECT id FROM packs WHERE hash = ?1", [&stored], |r| {
                    r.get(0)
                })?;
            pack_ids.insert(id, to);
        }
    }
    {
        let mut stmt =
            src.prepare("SELECT hash, kind, size, bytes, codec FROM objects ORDER BY id")?;
        let mut rows = stmt.query([])?;
        let mut ins = dest.prepare_cached(
            "INSERT INTO objects (hash, kind, size, codec, bytes) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT(hash) DO NOTHING",
        )?;
        while let Some(r) = rows.next()? {
            let stored: Vec<u8> = r.get(0)?;
            let kind: String = r.get(1)?;
            let size: i64 = r.get(2)?;
            let codec: i64 = r.get(4)?;
            let raw: Vec<u8> = r.get(3)?;
            let address = ObjectHash(<[u8; 32]>::try_from(stored.as_slice()).unwrap_or([0; 32]));
            let damaged = |reason: String| {
                MergeError::Store(StoreError::Corrupt {
                    hash: address,
                    reason: format!("in {}: {reason}; nothing was merged", path.display()),
                })
            };
            let bytes = super::packs::decode_object(src, &cache, &address, codec, raw.clone())
                .map_err(|e| match e.into_store_error(path) {
                    StoreError::Corrupt { reason, .. } => damaged(reason),
                    e => MergeError::Store(e),
                })?;
            let actual = ObjectHash::of(&kind, &bytes);
            if stored.as_slice() != actual.0 {
                return Err(damaged(format!(
                    "its `{kind}` bytes hash to {actual}, not to their address"
                )));
            }
            if size != bytes.len() as i64 {
                return Err(damaged(format!(
                    "its size column says {size} bytes, the object has {}",
                    bytes.len()
                )));
            }
            if ins.execute(rusqlite::params![&stored, kind, size, codec, raw])? > 0 {
                rep.objects_new += 1;
            } else {
                rep.objects_present += 1;
            }
        }
    }

    // 2. Solutions: one per variant.
    {
        let cols = columns(src, "solutions")?;
        for row in select_all(src, "solutions", &cols, "")? {
            let variant = row[0].clone();
            let theirs = blob32(&row[1]);
            let ours: Option<Vec<u8>> = dest
                .query_row(
                    "SELECT hash FROM solutions WHERE variant = ?1",
                    [&variant],
                    |r| r.get(0),
                )
                .optional()?;
            match ours {
                None => {
                    insert(dest, "solutions", &cols, &row)?;
                }
                Some(h) if Some(h.as_slice()) == theirs.as_ref().map(|t| &t.0[..]) => {}
                Some(_) => {
                    return Err(fail(
                        path,
                        format!(
                            "the solution of {variant:?} differs from the destination's \
                             (solved by another engine version?)"
                        ),
                    )
                    .into());
                }
            }
        }
    }

    // 3. Runs, parents before their branches; ids mapped.
    let run_cols = columns(src, "runs")?;
    let col = |name: &str| run_cols.iter().position(|c| c == name);
    let (Some(c_id), Some(c_hash), Some(c_name), Some(c_done), Some(c_head), Some(c_parent)) = (
        col("id"),
        col("hash"),
        col("name"),
        col("iterations_done"),
        col("head"),
        col("parent_run"),
    ) else {
        return Err(fail(path, "its runs table lacks a column merge needs").into());
    };
    let mut pending: Vec<Row> = select_all(src, "runs", &run_cols, "ORDER BY id")?;
    let mut map: BTreeMap<i64, i64> = BTreeMap::new();
    while !pending.is_empty() {
        let before = pending.len();
        let mut later = Vec::new();
        for mut row in pending {
            let SqlValue::Integer(src_id) = row[c_id] else {
                return Err(fail(path, "a run without an integer id").into());
            };
            let parent = match &row[c_parent] {
                SqlValue::Integer(p) => match map.get(p) {
                    Some(&q) => Some(q),
                    None => {
                        later.push(row);
                        continue;
                    }
                },
                _ => None,
            };
            let src_done = match row[c_done] {
                SqlValue::Integer(d) => d,
                _ => 0,
            };
            let candidates: Vec<(i64, i64, Option<Vec<u8>>)> = {
                let mut stmt = dest.prepare_cached(
                    "SELECT id, iterations_done, head FROM runs WHERE hash = ?1 AND name = ?2
                     ORDER BY id",
                )?;
                stmt.query_map(rusqlite::params![&row[c_hash], &row[c_name]], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })?
                .collect::<rusqlite::Result<_>>()?
            };
            let mut target = None;
            for (id, done, head) in &candidates {
                let same = if *done == src_done {
                    head.as_deref() == blob_ref(&row[c_head])
                } else if *done < src_done {
                    *done == 0 || record_at(src, src_id, *done)?.as_deref() == head.as_deref()
                } else {
                    src_done == 0
                        || record_at(dest, *id, src_done)?.as_deref() == blob_ref(&row[c_head])
                };
                if same {
                    target = Some((*id, *done));
                    break;
                }
            }
            let dest_id = match target {
                Some((id, done)) => {
                    if done < src_done {
                        // The source is further along the same line: take its progress.
                        let set = [
                            "iterations_done",
                            "iterations_planned",
                            "status",
                            "head",
                            "updated_at",
                        ];
                        for c in set {
                            let Some(i) = col(c) else { continue };
                            dest.execute(
                                &format!("UPDATE runs SET \"{c}\" = ?1 WHERE id = ?2"),
                                rusqlite::params![&row[i], id],
                            )?;
                        }
                        rep.runs_extended += 1;
                    } else {
                        rep.runs_present += 1;
                    }
                    id
                }
                None if !candidates.is_empty() => {
                    return Err(fail(
                        path,
                        format!(
                            "run {src_id} ({}) conflicts with run {} of the destination: same \
                             run record, different iteration records (one of the stores is \
                             damaged or was written by a non-deterministic build)",
                            text(&row[c_name]),
                            candidates[0].0
                        ),
                    )
                    .into());
                }
                None => {
                    let taken: bool = dest
                        .query_row("SELECT 1 FROM runs WHERE id = ?1", [src_id], |_| Ok(()))
                        .optional()?
                        .is_some();
                    let id = if taken {
                        let next: i64 =
                            dest.query_row("SELECT coalesce(max(id), 0) + 1 FROM runs", [], |r| {
                                r.get(0)
                            })?;
                        rep.renumbered.push((src_id, next));
                        next
                    } else {
                        src_id
                    };
                    row[c_id] = SqlValue::Integer(id);
                    row[c_parent] = parent.map_or(SqlValue::Null, SqlValue::Integer);
                    for lock in ["lock_pid", "lock_host", "lock_since"] {
                        if let Some(i) = col(lock) {
                            row[i] = SqlValue::Null;
                        }
                    }
                    insert(dest, "runs", &run_cols, &row)?;
                    rep.runs_new += 1;
                    id
                }
            };
            map.insert(src_id, dest_id);
        }
        if later.len() == before {
            return Err(fail(path, "runs whose parent run is missing").into());
        }
        pending = later;
    }

    // 4. Rows of every run table, run ids mapped.
    for (t, cols) in &run_tables {
        let ci = cols.iter().position(|c| c == "run_id").unwrap_or(0);
        let pack_col = (t == "run_games")
            .then(|| cols.iter().position(|c| c == "pack"))
            .flatten();
        for mut row in select_all(src, t, cols, "")? {
            // A packed game's row names its pack by the source's id.
            if let Some(pi) = pack_col
                && let SqlValue::Integer(p) = row[pi]
            {
                match pack_ids.get(&p) {
                    Some(&q) => row[pi] = SqlValue::Integer(q),
                    None => {
                        return Err(fail(
                            path,
                            format!("`{t}` names pack {p}, which does not exist"),
                        )
                        .into());
                    }
                }
            }
            if let SqlValue::Integer(r) = row[ci] {
                match map.get(&r) {
                    Some(&m) => row[ci] = SqlValue::Integer(m),
                    None => {
                        return Err(fail(
                            path,
                            format!("`{t}` names run {r}, which does not exist"),
                        )
                        .into());
                    }
                }
            }
            if insert(dest, t, cols, &row)? {
                rep.rows_new += 1;
            }
        }
    }

    // 5. Sweeps and their members.
    if src_tables.iter().any(|t| t == "sweeps") {
        let cols = columns(src, "sweeps")?;
        for row in select_all(src, "sweeps", &cols, "")? {
            if insert(dest, "sweeps", &cols, &row)? {
                rep.sweeps_new += 1;
            }
        }
        let cols = columns(src, "sweep_members")?;
        let ci = cols.iter().position(|c| c == "run_id").unwrap_or(0);
        for mut row in select_all(src, "sweep_members", &cols, "")? {
            let SqlValue::Integer(r) = row[ci] else {
                continue;
            };
            let Some(&m) = map.get(&r) else {
                return Err(
                    fail(path, format!("a sweep names run {r}, which does not exist")).into(),
                );
            };
            row[ci] = SqlValue::Integer(m);
            if !insert(dest, "sweep_members", &cols, &row)? {
                // Already there: it must be the same run (same run record).
                let (sweep, point, seed) = (&row[0], &row[1], &row[2]);
                let theirs: Vec<u8> = dest.query_row(
                    "SELECT r.hash FROM sweep_members m JOIN runs r ON r.id = m.run_id
                     WHERE m.sweep = ?1 AND m.point = ?2 AND m.seed_index = ?3",
                    rusqlite::params![sweep, point, seed],
                    |r| r.get(0),
                )?;
                let ours: Vec<u8> =
                    dest.query_row("SELECT hash FROM runs WHERE id = ?1", [m], |r| r.get(0))?;
                if theirs != ours {
                    return Err(fail(
                        path,
                        format!("a sweep's grid point {point:?} names another run record than the destination's"),
                    )
                    .into());
                }
            } else {
                rep.rows_new += 1;
            }
        }
    }
    Ok(rep)
}

fn blob_ref(v: &SqlValue) -> Option<&[u8]> {
    match v {
        SqlValue::Blob(b) => Some(b.as_slice()),
        _ => None,
    }
}

fn text(v: &SqlValue) -> String {
    match v {
        SqlValue::Text(t) => t.clone(),
        other => format!("{other:?}"),
    }
}

/// The iteration record hash of a run's iteration `i` (its own or an ancestor's).
fn record_at(conn: &Connection, run: i64, i: i64) -> rusqlite::Result<Option<Vec<u8>>> {
    conn.query_row(
        "SELECT hash FROM run_iterations WHERE run_id = ?1 AND iteration = ?2",
        rusqlite::params![run, i],
        |r| r.get(0),
    )
    .optional()
}
