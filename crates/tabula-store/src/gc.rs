//! `tabula rm` and `tabula gc`: removing runs and the objects no run reaches
//! (docs/store.md, "What a store holds: du, rm and gc").
//!
//! Both work inside one `BEGIN IMMEDIATE` transaction, all or nothing, and only while no live
//! process holds a run's lock: a writer's objects become reachable only when the rows that
//! name them commit (an iteration's records with its row, a pack with its `run_games` rows),
//! but a run also stores objects ahead of the rows that will name them (a stage's settings
//! record) and may name an object it found already stored. Holding the write lock and
//! refusing beside a live writer means nothing gc decides about can change while it decides.

use std::collections::BTreeSet;

use rusqlite::params;

use super::{ObjectHash, Result, Store, StoreError, is_busy, packs, runs, sqlite};

/// Kinds gc never removes: small records a run stores before the rows that name them, and
/// solutions (named by `solutions` rows through their manifests).
const ALWAYS_KEPT: &[&str] = &[
    "run/v1",
    "settings/v1",
    "settings/v2",
    "not-measured/v1",
    "solution/v1",
    "solution-chunk/v1",
];

/// What a collection removed.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Collected {
    /// Runs removed (rm), by id.
    pub runs: Vec<i64>,
    pub objects: u64,
    pub object_bytes: u64,
    pub packs: u64,
    pub pack_bytes: u64,
    /// The file's size before and after (after `VACUUM`, when it could run).
    pub file_bytes_before: u64,
    pub file_bytes_after: u64,
    /// Whether `VACUUM` gave the freed pages back to the file system.
    pub vacuumed: bool,
}

impl Store {
    /// Removes the runs `remove` (every row naming them), then every object that
    /// `reachable` (called inside the transaction, after the removal) does not return and no
    /// kept object is stored against, and every pack no `run_games` row names; then
    /// `VACUUM`s the file. Refused while a live process holds a run's lock.
    pub fn collect_garbage<E: From<StoreError>>(
        &mut self,
        remove: &[i64],
        reachable: impl FnOnce(&Store) -> std::result::Result<BTreeSet<ObjectHash>, E>,
    ) -> std::result::Result<Collected, E> {
        if self.read_only {
            return Err(StoreError::ReadOnly(self.path.display().to_string()).into());
        }
        let mut out = Collected {
            runs: remove.to_vec(),
            file_bytes_before: self.file_bytes()?,
            ..Collected::default()
        };
        let mut attempts = 0;
        loop {
            match self.conn.execute_batch("BEGIN IMMEDIATE") {
                Ok(()) => break,
                Err(e) if attempts < 3 && is_busy(&e) => attempts += 1,
                Err(e) => return Err(self.err(e).into()),
            }
        }
        let done = self.collect_in_transaction(remove, reachable, &mut out);
        let end = if done.is_ok() { "COMMIT" } else { "ROLLBACK" };
        let ended = self.conn.execute_batch(end).map_err(|e| self.err(e));
        self.packs.clear();
        done?;
        ended?;
        out.vacuumed = self.conn.execute_batch("VACUUM").is_ok();
        out.file_bytes_after = self.file_bytes()?;
        Ok(out)
    }

    fn collect_in_transaction<E: From<StoreError>>(
        &self,
        remove: &[i64],
        reachable: impl FnOnce(&Store) -> std::result::Result<BTreeSet<ObjectHash>, E>,
        out: &mut Collected,
    ) -> std::result::Result<(), E> {
        if let Some((run, holder)) = runs::first_live_lock(&self.conn).map_err(|e| self.err(e))? {
            return Err(StoreError::Locked { run, holder }.into());
        }
        // Rows go table by table; the foreign keys are checked once, at the commit.
        self.conn
            .execute_batch("PRAGMA defer_foreign_keys = ON")
            .map_err(|e| self.err(e))?;
        for &id in remove {
            self.remove_run_rows(id)?;
        }
        let keep = reachable(self)?;
        let (n, bytes) = self.remove_unreached(keep)?;
        (out.objects, out.object_bytes) = (n, bytes);
        let (n, bytes) = self.remove_unnamed_packs()?;
        (out.packs, out.pack_bytes) = (n, bytes);
        Ok(())
    }

    /// `VACUUM`s the file, giving its free pages back to the file system: (whether it could
    /// run, the file's bytes before, after). It cannot while another connection reads.
    pub fn vacuum(&mut self) -> Result<(bool, u64, u64)> {
        let before = self.file_bytes()?;
        let done = self.conn.execute_batch("VACUUM").is_ok();
        Ok((done, before, self.file_bytes()?))
    }

    fn file_bytes(&self) -> Result<u64> {
        self.conn
            .query_row(
                "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map(|v| v as u64)
            .map_err(|e| self.err(e))
    }

    /// Deletes every row of every table with a `run_id` column naming run `id`, then its
    /// `runs` row.
    fn remove_run_rows(&self, id: i64) -> Result<()> {
        let e = |e| sqlite(&self.path, e);
        let tables: Vec<String> = self
            .conn
            .prepare(
                "SELECT m.name FROM sqlite_schema m
                 WHERE m.type = 'table' AND m.name <> 'runs'
                   AND EXISTS (SELECT 1 FROM pragma_table_info(m.name) WHERE name = 'run_id')
                 ORDER BY m.name",
            )
            .and_then(|mut s| {
                s.query_map([], |r| r.get(0))?
                    .collect::<rusqlite::Result<_>>()
            })
            .map_err(e)?;
        for t in tables {
            self.conn
                .execute(&format!("DELETE FROM \"{t}\" WHERE run_id = ?1"), [id])
                .map_err(e)?;
        }
        self.conn
            .execute("DELETE FROM runs WHERE id = ?1", [id])
            .map_err(e)?;
        Ok(())
    }

    /// Deletes the objects not in `keep` (closed over what kept objects are stored against)
    /// and not of a kind always kept; returns how many and their stored bytes.
    fn remove_unreached(&self, mut keep: BTreeSet<ObjectHash>) -> Result<(u64, u64)> {
        let e = |e| sqlite(&self.path, e);
        // Objects stored against others (codec 4) need those others' bytes to decode.
        let against: Vec<(i64, ObjectHash)> = self
            .conn
            .prepare("SELECT id, hash FROM objects WHERE codec = 4")
            .and_then(|mut s| {
                s.query_map([], |r| Ok((r.get(0)?, runs::blob_hash(r.get(1)?, 1)?)))?
                    .collect::<rusqlite::Result<_>>()
            })
            .map_err(e)?;
        let mut grew = true;
        while grew {
            grew = false;
            for (id, h) in &against {
                if keep.contains(h) {
                    let refs = packs::references_of(&self.conn, *id)
                        .map_err(|x| x.into_store_error(&self.path))?
                        .unwrap_or_default();
                    for r in refs {
                        grew |= keep.insert(r);
                    }
                }
            }
        }
        let all: Vec<(i64, ObjectHash, String, i64)> = self
            .conn
            .prepare("SELECT id, hash, kind, length(bytes) FROM objects")
            .and_then(|mut s| {
                s.query_map([], |r| {
                    Ok((
                        r.get(0)?,
                        runs::blob_hash(r.get(1)?, 1)?,
                        r.get(2)?,
                        r.get(3)?,
                    ))
                })?
                .collect::<rusqlite::Result<_>>()
            })
            .map_err(e)?;
        let (mut n, mut bytes) = (0u64, 0u64);
        for (id, h, kind, len) in all {
            if keep.contains(&h) || ALWAYS_KEPT.contains(&kind.as_str()) {
                continue;
            }
            self.conn
                .execute("DELETE FROM objects WHERE id = ?1", params![id])
                .map_err(e)?;
            n += 1;
            bytes += len as u64;
        }
        Ok((n, bytes))
    }

    /// Deletes the packs no `run_games` row names (with their `pack_members` rows).
    fn remove_unnamed_packs(&self) -> Result<(u64, u64)> {
        let e = |e| sqlite(&self.path, e);
        let ids: Vec<i64> = self
            .conn
            .prepare(
                "SELECT id FROM packs p WHERE NOT EXISTS
                 (SELECT 1 FROM run_games g WHERE g.pack = p.id) ORDER BY id",
            )
            .and_then(|mut s| {
                s.query_map([], |r| r.get(0))?
                    .collect::<rusqlite::Result<_>>()
            })
            .map_err(e)?;
        let (mut n, mut bytes) = (0u64, 0u64);
        for id in ids {
            if let Some(s) = packs::delete(&self.conn, id).map_err(e)? {
                n += 1;
                bytes += s as u64;
            }
        }
        Ok((n, bytes))
    }

    /// The checkpoint roots (`snapshot`) of run `run_id`'s own iterations.
    pub fn snapshots_of(&self, run_id: i64) -> Result<Vec<ObjectHash>> {
        runs::hash_column(
            &self.conn,
            "SELECT snapshot FROM iterations WHERE run_id = ?1 ORDER BY iteration",
            [run_id],
        )
        .map_err(|e| self.err(e))
    }

    /// The `sweep/v1` records of the store's sweeps.
    pub fn sweep_records(&self) -> Result<Vec<ObjectHash>> {
        runs::hash_column(&self.conn, "SELECT hash FROM sweeps", []).map_err(|e| self.err(e))
    }
}
