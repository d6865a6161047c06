//! `tabula merge`: copy the records of several stores into one, by address (design in
//! `docs/experiments.md`).
//!
//! Everything lands in ONE write transaction on the destination: any error (a damaged
//! object, a run that conflicts, a table this build does not know) rolls all of it back, so
//! the destination is never half-written.
//!
//! - Objects are copied by hash after recomputing every hash from kind and bytes (an object
//!   that does not hash to its address is refused, naming it and its store).
//! - Solutions are keyed by variant; a differing solution of the same variant is a conflict,
//!   unless the caller has found the two equal in content (`Equivalent`: the same keys and
//!   values, written by another solver version, e.g. a draw stored as -0.0 rather than 0.0);
//!   then the destination keeps its own, and the source's objects are copied like any others.
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
use rusqlite::{Connection, OptionalExtension, params_from_iter};

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
    /// Variants whose solution differed in its bytes but not in its content: the
    /// destination's was kept.
    pub solutions_equivalent: Vec<String>,
}

/// Solutions the caller has compared and found equal in content though their addresses
/// differ: (variant, the source's solution address). The store cannot compare them itself (it
/// does not know a solution's layout; `solver` does).
pub type Equivalent = BTreeSet<(String, ObjectHash)>;

/// Tables merged by their own rules; every other table must have a `run_id` column.
const SPECIAL: &[&str] = &[
    "objects",
    "packs",
    // Derived from `packs` as each pack is copied (`packs::index_members`).
    "pack_members",
    "solutions",
    "runs",
    "sweeps",
    "sweep_members",
    "sweep_notes",
    "sweep_tags",
    "metric_defs",
];

fn fail(path: &Path, what: impl std::fmt::Display) -> StoreError {
    let what = what.to_string();
    // SQLite names no row: say what a failed reference means here.
    let why = match what.contains("FOREIGN KEY constraint failed") {
        true => format!(
            " (a row of the source names a record or run it does not hold: `tabula --db {} \
             fsck` lists it)",
            path.display()
        ),
        false => String::new(),
    };
    StoreError::Query(format!(
        "merge: {}: {what}{why}; nothing was merged",
        path.display()
    ))
}

/// Opens a source read-only and checks it is a store of exactly this build's schema.
pub(super) fn open_source(path: &Path) -> Result<Store> {
    // The one read-only path every command takes: the same checks and messages (a FIFO, a
    // device, an empty, foreign, older or newer file), no -wal/-shm left beside the source,
    // and a source in a read-only directory read like any other.
    let store = Store::open_read_only(path)?;
    let version: i64 = store
        .conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| fail(path, format!("not a tabula store ({e})")))?;
    if version != schema::VERSION {
        return Err(fail(
            path,
            format!(
                "schema version {version}, but this tabula writes version {} (merge only \
                 stores of the same version)",
                schema::VERSION
            ),
        ));
    }
    Ok(store)
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
pub(super) fn merge(
    into: &mut Store,
    sources: &[PathBuf],
    equivalent: &Equivalent,
) -> Result<Vec<MergedSource>> {
    let dest_path = into.path.clone();
    let mut conns = Vec::new();
    for p in sources {
        if same_file(p, &dest_path) {
            return Err(fail(p, "is the destination store itself"));
        }
        conns.push((p.clone(), open_source(p)?));
    }
    into.write(|w| {
        // A run another process is writing is not changed under it: the merge is refused,
        // naming the holder (checked inside the write transaction, so no writer starts
        // between the check and the merge).
        if let Some((run, holder)) =
            super::runs::first_live_lock(w.tx).map_err(|e| fail(&dest_path, e))?
        {
            return Err(StoreError::Locked { run, holder });
        }
        let mut out = Vec::new();
        for (p, src) in &conns {
            let sql = |e: rusqlite::Error| fail(p, e);
            // Every table of a source is read in one read transaction: one snapshot of its
            // committed state, so a source a run is writing (a running shard) merges as it
            // stood at one commit, never half of one (a game row whose pack came later).
            let merged = src.in_snapshot(|src| merge_one(w.tx, &src.conn, p, equivalent))?;
            out.push(merged.map_err(|e| match e {
                MergeError::Sqlite(e) => sql(e),
                MergeError::Store(e) => e,
            })?);
            // What was read of a source a writer changed meanwhile is not merged.
            src.check_unchanged()?;
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

/// Merges one source into `dest`, step by step; the steps' order matters (each step's rows
/// name what the steps before it copied).
fn merge_one(
    dest: &Connection,
    src: &Connection,
    path: &Path,
    equivalent: &Equivalent,
) -> Result<MergedSource, MergeError> {
    let m = Merging {
        dest,
        src,
        path,
        equivalent,
    };
    let mut rep = MergedSource {
        path: path.display().to_string(),
        ..MergedSource::default()
    };
    let src_tables = tables(src)?;
    let run_tables = m.run_tables(&src_tables)?;
    if src_tables.iter().any(|t| t == "metric_defs") {
        m.metric_defs()?;
    }
    let pack_ids = m.packs()?;
    m.objects(&mut rep)?;
    m.solutions(&mut rep)?;
    let map = m.runs(&mut rep)?;
    m.run_rows(&run_tables, &pack_ids, &map, &mut rep)?;
    if src_tables.iter().any(|t| t == "sweeps") {
        m.sweeps(&map, &src_tables, &mut rep)?;
    }
    Ok(rep)
}

/// A source being merged into the destination (inside the destination's transaction).
struct Merging<'a> {
    dest: &'a Connection,
    src: &'a Connection,
    /// The source's path, named by every error.
    path: &'a Path,
    equivalent: &'a Equivalent,
}

/// A table copied row by row with its run ids mapped, and its columns.
type RunTable = (String, Vec<String>);

/// The columns of the source's `runs` table, and where those merge reads are.
struct RunColumns {
    all: Vec<String>,
    id: usize,
    hash: usize,
    name: usize,
    done: usize,
    head: usize,
    parent: usize,
}

impl RunColumns {
    fn of(all: Vec<String>) -> Option<RunColumns> {
        let col = |name: &str| all.iter().position(|c| c == name);
        let (id, hash, name, done, head, parent) = (
            col("id")?,
            col("hash")?,
            col("name")?,
            col("iterations_done")?,
            col("head")?,
            col("parent_run")?,
        );
        Some(RunColumns {
            all,
            id,
            hash,
            name,
            done,
            head,
            parent,
        })
    }

    fn col(&self, name: &str) -> Option<usize> {
        self.all.iter().position(|c| c == name)
    }
}

impl Merging<'_> {
    fn fail(&self, what: impl std::fmt::Display) -> MergeError {
        MergeError::Store(fail(self.path, what))
    }

    /// A damaged object or pack of the source, named by its address.
    fn corrupt(&self, hash: ObjectHash, reason: impl std::fmt::Display) -> MergeError {
        MergeError::Store(StoreError::Corrupt {
            hash,
            reason: format!("in {}: {reason}; nothing was merged", self.path.display()),
        })
    }

    /// Checks that every table of the source exists in the destination and is either merged
    /// by its own rules ([`SPECIAL`]) or has a `run_id` column; returns the latter.
    fn run_tables(&self, src_tables: &[String]) -> Result<Vec<RunTable>, MergeError> {
        let dest_tables: BTreeSet<String> = tables(self.dest)?.into_iter().collect();
        let mut run_tables = Vec::new();
        for t in src_tables {
            if !dest_tables.contains(t) {
                return Err(self.fail(format!("table `{t}` does not exist in the destination")));
            }
            if SPECIAL.contains(&t.as_str()) {
                continue;
            }
            let cols = columns(self.src, t)?;
            if !cols.iter().any(|c| c == "run_id") {
                return Err(self.fail(format!(
                    "merge does not know how to copy table `{t}` (it has no run_id column)"
                )));
            }
            run_tables.push((t.clone(), cols));
        }
        Ok(run_tables)
    }

    /// Step 0, metric declarations (the `metrics` rows below name them): the source's, in
    /// its declaration order, declared in the destination (which re-creates `metrics_wide`
    /// when one is new).
    fn metric_defs(&self) -> Result<(), MergeError> {
        let defs: Vec<(String, String)> = self
            .src
            .prepare("SELECT name, description FROM metric_defs ORDER BY position")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let defs: Vec<(&str, &str)> = defs.iter().map(|(n, d)| (n.as_str(), d.as_str())).collect();
        super::runs::declare_metrics(self.dest, &defs)?;
        Ok(())
    }

    /// Step 1a, packs (an elided object's bytes live partly in packs): each decoded and
    /// checked against its columns, copied as stored; returns the map from source to
    /// destination pack ids.
    fn packs(&self) -> Result<BTreeMap<i64, i64>, MergeError> {
        let mut pack_ids: BTreeMap<i64, i64> = BTreeMap::new();
        let mut stmt = self.src.prepare(
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
                match e.into_store_error(self.path) {
                    StoreError::Corrupt { hash, reason } => self.corrupt(hash, reason),
                    e => MergeError::Store(e),
                }
            })?;
            let expect: Vec<u8> = pack
                .members
                .iter()
                .flat_map(|(h, _)| h.0[..4].to_vec())
                .collect();
            let sum: i64 = pack.members.iter().map(|(_, b)| b.len() as i64).sum();
            if expect != prefixes || sum != size {
                return Err(self.corrupt(
                    hash,
                    "pack: its prefixes or size column disagree with its members",
                ));
            }
            self.dest
                .prepare_cached(
                    "INSERT INTO packs (hash, kind, members, size, prefixes, bytes)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(hash) DO NOTHING",
                )?
                .execute(rusqlite::params![
                    &stored, kind, members, size, prefixes, bytes
                ])?;
            let to: i64 =
                self.dest
                    .query_row("SELECT id FROM packs WHERE hash = ?1", [&stored], |r| {
                        r.get(0)
                    })?;
            super::packs::index_members(self.dest, to).map_err(|e| match e {
                super::objects::Error::Sqlite(e) => MergeError::Sqlite(e),
                super::objects::Error::Store(e) => MergeError::Store(e),
            })?;
            pack_ids.insert(id, to);
        }
        Ok(pack_ids)
    }

    /// Step 1b, objects: every address recomputed from the decoded bytes; stored forms are
    /// copied as they are.
    fn objects(&self, rep: &mut MergedSource) -> Result<(), MergeError> {
        let cache = super::packs::Cache::default();
        let mut stmt = self
            .src
            .prepare("SELECT hash, kind, size, bytes, codec FROM objects ORDER BY id")?;
        let mut rows = stmt.query([])?;
        let mut ins = self.dest.prepare_cached(
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
            let bytes = super::packs::decode_object(self.src, &cache, &address, codec, raw.clone())
                .map_err(|e| match e.into_store_error(self.path) {
                    StoreError::Corrupt { reason, .. } => self.corrupt(address, reason),
                    e => MergeError::Store(e),
                })?;
            let actual = ObjectHash::of(&kind, &bytes);
            if stored.as_slice() != actual.0 {
                return Err(self.corrupt(
                    address,
                    format!("its `{kind}` bytes hash to {actual}, not to their address"),
                ));
            }
            if size != bytes.len() as i64 {
                return Err(self.corrupt(
                    address,
                    format!(
                        "its size column says {size} bytes, the object has {}",
                        bytes.len()
                    ),
                ));
            }
            if ins.execute(rusqlite::params![&stored, kind, size, codec, raw])? > 0 {
                rep.objects_new += 1;
            } else {
                rep.objects_present += 1;
            }
        }
        Ok(())
    }

    /// Step 2, solutions: one per variant; a differing solution of a variant is a conflict
    /// unless the caller found it equal in content.
    fn solutions(&self, rep: &mut MergedSource) -> Result<(), MergeError> {
        let cols = columns(self.src, "solutions")?;
        for row in select_all(self.src, "solutions", &cols, "")? {
            let SqlValue::Text(variant) = &row[0] else {
                return Err(self.fail("a solution row without a variant name"));
            };
            let theirs = blob32(&row[1]);
            let ours: Option<Vec<u8>> = self
                .dest
                .query_row(
                    "SELECT hash FROM solutions WHERE variant = ?1",
                    [variant],
                    |r| r.get(0),
                )
                .optional()?;
            match (ours, theirs) {
                (None, _) => {
                    insert(self.dest, "solutions", &cols, &row)?;
                }
                (Some(h), Some(t)) if h.as_slice() == &t.0[..] => {}
                (Some(_), Some(t)) if self.equivalent.contains(&(variant.clone(), t)) => {
                    rep.solutions_equivalent.push(variant.clone());
                }
                (Some(_), _) => {
                    return Err(self.fail(format!(
                        "the solution of {variant} differs from the destination's in its \
                         values, not only in how they are written (solved under other rules?)"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Step 3, runs: parents before their branches; returns the map from source to
    /// destination run ids.
    fn runs(&self, rep: &mut MergedSource) -> Result<BTreeMap<i64, i64>, MergeError> {
        let Some(cols) = RunColumns::of(columns(self.src, "runs")?) else {
            return Err(self.fail("its runs table lacks a column merge needs"));
        };
        let mut pending: Vec<Row> = select_all(self.src, "runs", &cols.all, "ORDER BY id")?;
        let mut map: BTreeMap<i64, i64> = BTreeMap::new();
        while !pending.is_empty() {
            let before = pending.len();
            let mut later = Vec::new();
            for row in pending {
                let SqlValue::Integer(src_id) = row[cols.id] else {
                    return Err(self.fail("a run without an integer id"));
                };
                let parent = match &row[cols.parent] {
                    SqlValue::Integer(p) => match map.get(p) {
                        Some(&q) => Some(q),
                        None => {
                            later.push(row);
                            continue;
                        }
                    },
                    _ => None,
                };
                let dest_id = self.run(&cols, row, src_id, parent, rep)?;
                map.insert(src_id, dest_id);
            }
            if later.len() == before {
                return Err(self.fail("runs whose parent run is missing"));
            }
            pending = later;
        }
        Ok(map)
    }

    /// Step 3, one run whose parent (if any) is merged, as `parent` in the destination: the
    /// same line in the destination (kept, or extended to the source's progress), or a new
    /// row. Returns its id in the destination.
    fn run(
        &self,
        cols: &RunColumns,
        row: Row,
        src_id: i64,
        parent: Option<i64>,
        rep: &mut MergedSource,
    ) -> Result<i64, MergeError> {
        let src_done = match row[cols.done] {
            SqlValue::Integer(d) => d,
            _ => 0,
        };
        let candidates: Vec<(i64, i64, Option<Vec<u8>>)> = self
            .dest
            .prepare_cached(
                "SELECT id, iterations_done, head FROM runs WHERE hash = ?1 AND name = ?2
                 ORDER BY id",
            )?
            .query_map(rusqlite::params![&row[cols.hash], &row[cols.name]], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        match self.same_line(&candidates, src_id, src_done, blob_ref(&row[cols.head]))? {
            Some((id, done)) => {
                if done < src_done {
                    self.extend_run(cols, &row, id)?;
                    rep.runs_extended += 1;
                } else {
                    rep.runs_present += 1;
                }
                Ok(id)
            }
            None if !candidates.is_empty() => Err(self.fail(format!(
                "run {src_id} ({}) conflicts with run {} of the destination: same \
                 run record, different iteration records (one of the stores is \
                 damaged or was written by a non-deterministic build)",
                text(&row[cols.name]),
                candidates[0].0
            ))),
            None => self.new_run(cols, row, src_id, parent, rep),
        }
    }

    /// The first of `candidates` (the destination's runs of the same run record and name:
    /// id, iterations done, head) on the same line as the source's run `src_id`: the shorter
    /// one's head is the longer one's iteration record at that iteration. Returns its id and
    /// iterations done.
    fn same_line(
        &self,
        candidates: &[(i64, i64, Option<Vec<u8>>)],
        src_id: i64,
        src_done: i64,
        src_head: Option<&[u8]>,
    ) -> rusqlite::Result<Option<(i64, i64)>> {
        for (id, done, head) in candidates {
            let same = if *done == src_done {
                head.as_deref() == src_head
            } else if *done < src_done {
                *done == 0 || record_at(self.src, src_id, *done)?.as_deref() == head.as_deref()
            } else {
                src_done == 0 || record_at(self.dest, *id, src_done)?.as_deref() == src_head
            };
            if same {
                return Ok(Some((*id, *done)));
            }
        }
        Ok(None)
    }

    /// The source is further along the same line as the destination's run `id`: take its
    /// progress.
    fn extend_run(&self, cols: &RunColumns, row: &Row, id: i64) -> Result<(), MergeError> {
        let set = [
            "iterations_done",
            "iterations_planned",
            "status",
            "head",
            "updated_at",
        ];
        for c in set {
            let Some(i) = cols.col(c) else { continue };
            self.dest.execute(
                &format!("UPDATE runs SET \"{c}\" = ?1 WHERE id = ?2"),
                rusqlite::params![&row[i], id],
            )?;
        }
        Ok(())
    }

    /// A run the destination lacks: inserted under its own id when that is free, else the
    /// next free one, its parent mapped and its lock cleared. Returns its id.
    fn new_run(
        &self,
        cols: &RunColumns,
        mut row: Row,
        src_id: i64,
        parent: Option<i64>,
        rep: &mut MergedSource,
    ) -> Result<i64, MergeError> {
        let taken: bool = self
            .dest
            .query_row("SELECT 1 FROM runs WHERE id = ?1", [src_id], |_| Ok(()))
            .optional()?
            .is_some();
        let id = if taken {
            let next: i64 =
                self.dest
                    .query_row("SELECT coalesce(max(id), 0) + 1 FROM runs", [], |r| {
                        r.get(0)
                    })?;
            rep.renumbered.push((src_id, next));
            next
        } else {
            src_id
        };
        row[cols.id] = SqlValue::Integer(id);
        row[cols.parent] = parent.map_or(SqlValue::Null, SqlValue::Integer);
        for lock in ["lock_pid", "lock_host", "lock_since"] {
            if let Some(i) = cols.col(lock) {
                row[i] = SqlValue::Null;
            }
        }
        insert(self.dest, "runs", &cols.all, &row)?;
        rep.runs_new += 1;
        Ok(id)
    }

    /// Step 4, the rows of every run table: run ids (and `run_games`' pack ids) mapped.
    fn run_rows(
        &self,
        run_tables: &[RunTable],
        pack_ids: &BTreeMap<i64, i64>,
        map: &BTreeMap<i64, i64>,
        rep: &mut MergedSource,
    ) -> Result<(), MergeError> {
        for (t, cols) in run_tables {
            let ci = cols.iter().position(|c| c == "run_id").unwrap_or(0);
            let pack_col = (t == "run_games")
                .then(|| cols.iter().position(|c| c == "pack"))
                .flatten();
            for mut row in select_all(self.src, t, cols, "")? {
                // A packed game's row names its pack by the source's id.
                if let Some(pi) = pack_col
                    && let SqlValue::Integer(p) = row[pi]
                {
                    match pack_ids.get(&p) {
                        Some(&q) => row[pi] = SqlValue::Integer(q),
                        None => {
                            return Err(
                                self.fail(format!("`{t}` names pack {p}, which does not exist"))
                            );
                        }
                    }
                }
                if let SqlValue::Integer(r) = row[ci] {
                    match map.get(&r) {
                        Some(&m) => row[ci] = SqlValue::Integer(m),
                        None => {
                            return Err(
                                self.fail(format!("`{t}` names run {r}, which does not exist"))
                            );
                        }
                    }
                }
                if insert(self.dest, t, cols, &row)? {
                    rep.rows_new += 1;
                }
            }
        }
        Ok(())
    }

    /// Step 5, sweeps, then their members, notes and tags (a note the destination already
    /// has for a sweep of that name is kept).
    fn sweeps(
        &self,
        map: &BTreeMap<i64, i64>,
        src_tables: &[String],
        rep: &mut MergedSource,
    ) -> Result<(), MergeError> {
        let cols = columns(self.src, "sweeps")?;
        for row in select_all(self.src, "sweeps", &cols, "")? {
            if insert(self.dest, "sweeps", &cols, &row)? {
                rep.sweeps_new += 1;
            }
        }
        self.sweep_members(map, rep)?;
        for t in ["sweep_notes", "sweep_tags"] {
            if src_tables.iter().any(|x| x == t) {
                let cols = columns(self.src, t)?;
                for row in select_all(self.src, t, &cols, "")? {
                    if insert(self.dest, t, &cols, &row)? {
                        rep.rows_new += 1;
                    }
                }
            }
        }
        Ok(())
    }

    /// Step 5, sweep members: run ids mapped; a member already present must name the same
    /// run record.
    fn sweep_members(
        &self,
        map: &BTreeMap<i64, i64>,
        rep: &mut MergedSource,
    ) -> Result<(), MergeError> {
        let cols = columns(self.src, "sweep_members")?;
        let ci = cols.iter().position(|c| c == "run_id").unwrap_or(0);
        for mut row in select_all(self.src, "sweep_members", &cols, "")? {
            let SqlValue::Integer(r) = row[ci] else {
                continue;
            };
            let Some(&m) = map.get(&r) else {
                return Err(self.fail(format!("a sweep names run {r}, which does not exist")));
            };
            row[ci] = SqlValue::Integer(m);
            if insert(self.dest, "sweep_members", &cols, &row)? {
                rep.rows_new += 1;
                continue;
            }
            // Already there: it must be the same run (same run record).
            let (sweep, point, seed) = (&row[0], &row[1], &row[2]);
            let theirs: Vec<u8> = self.dest.query_row(
                "SELECT r.hash FROM sweep_members m JOIN runs r ON r.id = m.run_id
                 WHERE m.sweep = ?1 AND m.point = ?2 AND m.seed_index = ?3",
                rusqlite::params![sweep, point, seed],
                |r| r.get(0),
            )?;
            let ours: Vec<u8> =
                self.dest
                    .query_row("SELECT hash FROM runs WHERE id = ?1", [m], |r| r.get(0))?;
            if theirs != ours {
                return Err(self.fail(format!(
                    "a sweep's grid point {point:?} names another run record than the destination's"
                )));
            }
        }
        Ok(())
    }
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
