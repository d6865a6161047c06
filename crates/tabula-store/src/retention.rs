//! Keeping fewer games (docs/store.md, "Keeping fewer games"): a run's retention, the
//! removal of an iteration's games (its record stored whole first), the packs no game row
//! names any more, and the coverage sets stored in their place.

use rusqlite::{OptionalExtension, params};

use super::{Encoded, ObjectHash, Result, Store, Writer, objects, runs, sqlite};

impl Writer<'_> {
    /// Sets a run's retention (`runs.keep_games`: `all`, `every:K` or `none`; checked by the
    /// caller).
    pub fn set_keep_games(&self, run_id: i64, keep: &str) -> Result<()> {
        self.tx
            .execute(
                "UPDATE runs SET keep_games = ?2 WHERE id = ?1",
                params![run_id, keep],
            )
            .map(|_| ())
            .map_err(|e| sqlite(self.path, e))
    }

    /// Removes the games of `run_id`'s iteration `iteration`: its record (`record`, encoded
    /// as stored: its address must be the iteration's) is stored whole with its games'
    /// addresses, its `run_games` rows go and `games_kept` becomes 0. Returns the packs its
    /// games were in (they may hold other runs' games too: [`Writer::drop_unreferenced_packs`]).
    pub fn unkeep_games(&self, run_id: i64, iteration: u32, record: &Encoded) -> Result<Vec<i64>> {
        let tx = self.tx;
        let e = |e| sqlite(self.path, e);
        let listed: Option<Vec<u8>> = tx
            .query_row(
                "SELECT hash FROM iterations WHERE run_id = ?1 AND iteration = ?2",
                params![run_id, iteration],
                |r| r.get(0),
            )
            .optional()
            .map_err(e)?;
        if listed.as_deref() != Some(&record.hash.0[..]) {
            return Err(super::StoreError::Query(format!(
                "run {run_id} iteration {iteration}: no iteration row with record {}",
                record.hash.to_hex()
            )));
        }
        // Whole, so it reads without the packs (codec 0; the addresses do not compress).
        tx.execute(
            "UPDATE objects SET bytes = ?2, codec = 0, size = ?3 WHERE hash = ?1",
            params![&record.hash.0[..], record.bytes, record.bytes.len() as i64],
        )
        .map_err(e)?;
        let mut packs: Vec<i64> = tx
            .prepare_cached(
                "SELECT DISTINCT pack FROM run_games
                 WHERE run_id = ?1 AND iteration = ?2 AND pack IS NOT NULL",
            )
            .and_then(|mut s| {
                s.query_map(params![run_id, iteration], |r| r.get(0))?
                    .collect::<rusqlite::Result<Vec<i64>>>()
            })
            .map_err(e)?;
        packs.sort_unstable();
        tx.execute(
            "DELETE FROM run_games WHERE run_id = ?1 AND iteration = ?2",
            params![run_id, iteration],
        )
        .map_err(e)?;
        tx.execute(
            "UPDATE iterations SET games_kept = 0, games_bytes = 0
             WHERE run_id = ?1 AND iteration = ?2",
            params![run_id, iteration],
        )
        .map_err(e)?;
        Ok(packs)
    }

    /// Deletes those of `packs` that no `run_games` row names any more (one pass over
    /// `run_games`, which has no index by pack); returns how many and their stored bytes.
    pub fn drop_unreferenced_packs(&self, packs: &[i64]) -> Result<(u64, u64)> {
        if packs.is_empty() {
            return Ok((0, 0));
        }
        let e = |e| sqlite(self.path, e);
        let list = packs
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let named: std::collections::BTreeSet<i64> = self
            .tx
            .prepare(&format!(
                "SELECT DISTINCT pack FROM run_games WHERE pack IN ({list})"
            ))
            .and_then(|mut s| {
                s.query_map([], |r| r.get(0))?
                    .collect::<rusqlite::Result<_>>()
            })
            .map_err(e)?;
        let (mut n, mut bytes) = (0u64, 0u64);
        for p in packs.iter().filter(|p| !named.contains(p)) {
            let size = super::packs::delete(self.tx, *p).map_err(e)?;
            if let Some(s) = size {
                n += 1;
                bytes += s as u64;
            }
        }
        Ok((n, bytes))
    }

    /// Stores the coverage set after `run_id`'s iteration `iteration` (record `record`): the
    /// object `hash`, stored from `object` when given (else already stored: the set equals
    /// an earlier iteration's).
    pub fn add_coverage(
        &self,
        run_id: i64,
        iteration: u32,
        record: &ObjectHash,
        hash: &ObjectHash,
        object: Option<&Encoded>,
    ) -> Result<()> {
        if let Some(c) = object {
            objects::put_compressed(self.tx, c.kind, &c.bytes, &c.hash)
                .map_err(|e| e.into_store_error(self.path))?;
        }
        self.tx
            .execute(
                "INSERT INTO run_coverage (run_id, iteration, record, hash) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(run_id, iteration) DO UPDATE SET record = ?3, hash = ?4",
                params![run_id, iteration, &record.0[..], &hash.0[..]],
            )
            .map(|_| ())
            .map_err(|e| sqlite(self.path, e))
    }
}

impl Store {
    /// A run's retention (`runs.keep_games`).
    pub fn keep_games(&self, run_id: i64) -> Result<String> {
        self.conn
            .query_row("SELECT keep_games FROM runs WHERE id = ?1", [run_id], |r| {
                r.get(0)
            })
            .map_err(|e| self.err(e))
    }

    /// The stored coverage set after the iteration whose record is `record`, if any.
    pub fn coverage_of(&self, record: &ObjectHash) -> Result<Option<ObjectHash>> {
        self.conn
            .prepare_cached("SELECT hash FROM run_coverage WHERE record = ?1 LIMIT 1")
            .and_then(|mut s| {
                s.query_row([&record.0[..]], |r| runs::blob_hash(r.get(0)?, 0))
                    .optional()
            })
            .map_err(|e| self.err(e))
    }

    /// The iterations of `run_id` whose games retention removed, in order.
    pub fn unkept_iterations(&self, run_id: i64) -> Result<Vec<u32>> {
        self.conn
            .prepare_cached(
                "SELECT iteration FROM iterations WHERE run_id = ?1 AND games_kept = 0
                 ORDER BY iteration",
            )
            .and_then(|mut s| {
                s.query_map([run_id], |r| r.get(0))?
                    .collect::<rusqlite::Result<_>>()
            })
            .map_err(|e| self.err(e))
    }

    /// The iteration records whose games a run's retention removed.
    pub fn records_without_games(&self) -> Result<Vec<ObjectHash>> {
        runs::hash_column(
            &self.conn,
            "SELECT DISTINCT hash FROM iterations WHERE games_kept = 0",
            [],
        )
        .map_err(|e| self.err(e))
    }

    /// Whether the games of the iteration whose record is `record` were removed by a run's
    /// retention (and with it, the run and iteration that removed them).
    pub fn games_removed(&self, record: &ObjectHash) -> Result<Option<(i64, u32, String)>> {
        self.conn
            .query_row(
                "SELECT i.run_id, i.iteration, r.keep_games FROM iterations i
                 JOIN runs r ON r.id = i.run_id
                 WHERE i.hash = ?1 AND i.games_kept = 0 LIMIT 1",
                [&record.0[..]],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(|e| self.err(e))
    }
}
